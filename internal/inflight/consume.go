package inflight

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrConsumerEnded: the consumer stopped delivering on its own.
var ErrConsumerEnded = errors.New("the consumer stopped")

// Lanes is how Consume hands messages to handlers.
type Lanes struct {
	// Name names the consumer in errors and debug logs.
	Name string
	// Workers is how many handlers run at once (at least 1). Messages of
	// one subject always go to the same worker, in order.
	Workers int
	// AckWait is the consumer's; held messages get InProgress every third
	// of it.
	AckWait time.Duration
	// PullMax bounds the messages the client buffers.
	PullMax int
	// Logger receives the consumer's errors at Debug (nil: discarded).
	Logger *slog.Logger
}

// Consume hands the messages of cons to l.Workers handlers, by subject,
// and keeps every message received and not yet handled from being
// redelivered (InProgress). It returns nil once ctx ends, or why the
// consumer stopped (deleted, connection closed: ErrConsumerEnded or the
// client's error); it returns only after every handler has returned.
// handle must settle its message; one not yet handed to a worker when
// Consume stops is left unsettled and redelivered.
func Consume(ctx context.Context, cons jetstream.Consumer, l Lanes, handle func(context.Context, jetstream.Msg)) error {
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	stopping := make(chan struct{})
	held := New()
	var hb sync.WaitGroup
	hb.Go(func() { held.Heartbeat(stopping, l.AckWait/3) })
	work := make([]chan jetstream.Msg, max(l.Workers, 1))
	var wg sync.WaitGroup
	for i := range work {
		work[i] = make(chan jetstream.Msg, 64)
		wg.Go(func() {
			for m := range work[i] {
				handle(ctx, m)
				held.Drop(m)
			}
		})
	}
	lost := make(chan error, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := fnv.New32a()
		h.Write([]byte(m.Subject()))
		held.Add(m)
		select {
		case work[h.Sum32()%uint32(len(work))] <- m:
		case <-stopping: // not settled: redelivered
			held.Drop(m)
		}
	}, jetstream.PullMaxMessages(l.PullMax), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConnectionClosed) {
			select {
			case lost <- err:
			default:
			}
		}
		logger.Debug("consumer", "consumer", l.Name, "err", err)
	}))
	if err == nil {
		select {
		case <-ctx.Done():
		case err = <-lost:
		case <-cc.Closed():
			err = ErrConsumerEnded
		}
		close(stopping)
		cc.Stop()
		<-cc.Closed()
	} else {
		err = fmt.Errorf("consume %s: %w", l.Name, err)
		close(stopping)
	}
	for _, w := range work {
		close(w)
	}
	wg.Wait()
	hb.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}
