package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// component is a long-running part of serve, such as the projection or
// the scheduler. run must return soon after its ctx ends; an error it
// returns before then stops serve.
type component struct {
	name string
	run  func(ctx context.Context) error
}

// errFinished is returned by a component whose work is done and that asks
// the others to stop: a clean end, like a signal.
var errFinished = errors.New("finished")

// runComponents runs the components under one context until ctx ends or
// one of them fails, which cancels the others. It returns once every
// component has returned: nil if ctx ended and every component stopped
// quietly, otherwise the first failure, naming its component. A component
// that returns nil before ctx ends is a failure too, since serve cannot go
// on without it; one that returns ctx's error after ctx ended is not.
func runComponents(ctx context.Context, logger *slog.Logger, components ...component) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for _, c := range components {
		wg.Go(func() {
			err := c.run(ctx)
			if errors.Is(err, errFinished) {
				cancel()
				return
			}
			stopping := ctx.Err() != nil
			if stopping && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return
			}
			if err == nil {
				err = errors.New("stopped before shutdown")
			}
			err = fmt.Errorf("%s: %w", c.name, err)
			logger.Error("component failed", "component", c.name, "err", err)
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			cancel()
		})
	}
	<-ctx.Done()
	wg.Wait()
	return first
}
