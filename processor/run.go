package processor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/transient"
)

// Run provisions the streams, creates or updates the durable consumers and
// runs the functions until ctx ends or Stop is called. It then stops
// pulling, lets running handlers finish (at most the shutdown timeout;
// messages not started are nak'ed for immediate redelivery) and returns
// only after every goroutine it started has stopped: nil after a normal
// stop, or the error that kept it from starting (a consumer that cannot be
// created, a STATE_EVENT function without evolve: ErrInvalidFunction). A
// transient error while provisioning (a timeout or a cluster without a
// leader, during an election) is logged and retried with backoff for up to
// ProvisionTimeout; a refused configuration returns at once. A second Run
// returns ErrRunning. It logs a warning at start when functions are
// registered but no recorder is, an Info line when it begins to stop and a
// Warn line when the shutdown timeout cancels handlers still running.
func (p *Processor) Run(ctx context.Context) error {
	groups, err := p.begin()
	if err != nil {
		return err
	}
	return p.finish(p.run(ctx, groups))
}

// begin marks p running and returns its groups, or why it cannot run.
func (p *Processor) begin() ([]*group, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil, fmt.Errorf("run processor of context %s: Run or Start was called before; call it once per Processor: %w", p.context, ErrRunning)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	p.running = true
	return p.groups, nil
}

// finish records Run's result for Wait and closes Closed.
func (p *Processor) finish(err error) error {
	p.runErr = err
	close(p.closed)
	return err
}

// Start is Run split in two: it runs Run in a goroutine and returns once
// the processor is ready to handle messages (nil) or Run has returned
// without becoming ready (Run's error: a refused configuration,
// provisioning that failed, ctx ended); Wait is the other half. ctx is
// Run's, and cancelling it is how the processor stops; Wait then returns
// Run's result. A second Start or Run returns ErrRunning.
//
//	ctx, stop := context.WithCancel(ctx)
//	if err := p.Start(ctx); err != nil {
//		stop()
//		return err
//	}
//	defer func() { stop(); _ = p.Wait() }()
func (p *Processor) Start(ctx context.Context) error {
	groups, err := p.begin()
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- p.finish(p.run(ctx, groups)) }()
	select {
	case <-p.ready:
		return nil
	case err := <-errc:
		if err == nil {
			err = fmt.Errorf("processor of context %s stopped before it was ready: %w", p.context, context.Cause(ctx))
		}
		return err
	}
}

// Wait blocks until Run has returned and returns its result: nil after a
// normal stop, or the error that kept it from starting. It blocks forever
// if Run (or Start) was never called. Safe to call from any goroutine, any
// number of times.
func (p *Processor) Wait() error {
	<-p.closed
	return p.runErr
}

func (p *Processor) run(ctx context.Context, groups []*group) error {
	runners, err := p.runners(ctx, groups)
	if err != nil {
		return err
	}
	if err := p.startHolds(ctx); err != nil {
		return err
	}
	if err := p.startRanges(ctx); err != nil {
		return err
	}
	if len(groups) > 0 {
		set, err := p.startCircuits(ctx)
		if err != nil {
			return err
		}
		// The circuits stop last, once nothing calls a function any more,
		// with a last flush of their refused counts.
		circuitCtx, stopCircuits := context.WithCancel(context.WithoutCancel(ctx))
		var circuits sync.WaitGroup
		defer func() {
			stopCircuits()
			circuits.Wait()
		}()
		p.runCircuits(ctx, circuitCtx, set, &circuits)
	}
	log := p.o.logger.With("processor_context", p.context)
	if p.o.recorder == nil && len(groups) > 0 {
		log.Warn("amends processor: no recorder (processor.WithRecorder, or amends.New); final failures will be logged and acked as FAILURE_UNRECORDED, never recorded or replayed")
	}
	close(p.ready)

	// The failure summary stops after every runner, release and range
	// replay returned: its last line then counts every failure recorded.
	summaryCtx, stopSummary := context.WithCancel(context.WithoutCancel(ctx))
	var summary sync.WaitGroup
	defer func() {
		stopSummary()
		summary.Wait()
	}()
	summary.Go(func() { p.summarize(summaryCtx) })

	stopping, stop := context.WithCancel(ctx)
	var watch sync.WaitGroup
	defer func() {
		stop()
		watch.Wait()
	}()
	watch.Go(func() { p.heartbeat(stopping) })
	watch.Go(func() {
		select {
		case <-p.stopCh:
			stop()
		case <-stopping.Done():
		}
	})
	// Handlers do not see the stop at once: they get the shutdown timeout.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var timer *time.Timer
	var timerMu sync.Mutex
	unregister := context.AfterFunc(stopping, func() {
		log.Info("amends processor: stopping; running handlers may finish within the shutdown timeout", "shutdownTimeout", p.o.shutdownTimeout)
		timerMu.Lock()
		timer = time.AfterFunc(p.o.shutdownTimeout, func() {
			log.Warn("amends processor: shutdown timeout passed; cancelling the handlers still running, their messages will be redelivered", "shutdownTimeout", p.o.shutdownTimeout)
			cancelWork()
		})
		timerMu.Unlock()
	})
	defer func() {
		unregister()
		timerMu.Lock()
		if timer != nil {
			timer.Stop()
		}
		timerMu.Unlock()
	}()

	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() { r.run(stopping, work) })
	}
	if p.holds != nil {
		watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
		var holds sync.WaitGroup
		holds.Go(func() { p.holds.watch(watchCtx) })
		holds.Go(func() { p.runReleases(stopping, work) })
		holds.Go(func() { p.runHeadChecks(stopping) })
		defer func() {
			stopWatch()
			holds.Wait()
		}()
	}
	if p.ranges != nil {
		var ranges sync.WaitGroup
		ranges.Go(func() { p.runRanges(stopping, work) })
		defer ranges.Wait()
	}
	<-stopping.Done()
	wg.Wait()
	return nil
}

// ProvisionTimeout bounds how long Run retries provisioning its streams
// and consumers through transient errors (a leader election, a lost
// server) before it gives up and returns the last error.
const ProvisionTimeout = 60 * time.Second

// runners provisions the streams and consumers and returns one runner per
// consumer. Transient errors are retried, with backoff, for up to
// ProvisionTimeout; others return at once.
func (p *Processor) runners(ctx context.Context, groups []*group) ([]*runner, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
	defer cancel()
	log := p.o.logger.With("processor_context", p.context)
	stream := p.store.StreamName(p.context)
	if err := transient.Retry(ctx, log, "the stream "+stream, func(ctx context.Context) error { return p.store.Provision(ctx, p.context) }); err != nil {
		return nil, fmt.Errorf("processor of context %s: %w", p.context, err)
	}
	ensure := func(stream string, cfg jetstream.ConsumerConfig) error {
		return transient.Retry(ctx, log, "the consumer "+cfg.Durable+" on "+stream, func(ctx context.Context) error {
			_, err := p.ensureConsumer(ctx, stream, cfg)
			return err
		})
	}
	var out []*runner
	for _, g := range groups {
		cfg := p.consumerConfig(g)
		if err := ensure(stream, cfg); err != nil {
			return nil, err
		}
		r, err := p.newRunner(stream, cfg, p.o.concurrency, &p.metrics.ConsumerMetrics)
		if err != nil {
			return nil, err
		}
		r.handle = func(ctx context.Context, ls *laneState, m *inflight.Msg) { p.dispatch(ctx, g, ls, m) }
		g.live = r
		out = append(out, r)
	}
	if p.o.recorder == nil || !p.o.replay {
		return out, nil
	}
	stream = p.store.StreamName(aggregate.Context)
	if err := transient.Retry(ctx, log, "the stream "+stream, func(ctx context.Context) error { return p.store.Provision(ctx, aggregate.Context) }); err != nil {
		return nil, fmt.Errorf("processor of context %s: replays: %w", p.context, err)
	}
	cfg := p.replayConfig()
	if err := ensure(stream, cfg); err != nil {
		return nil, err
	}
	r, err := p.newRunner(stream, cfg, p.o.replayLanes, &p.metrics.Replay)
	if err != nil {
		return nil, err
	}
	r.backoff, r.handle = true, p.dispatchReplay
	return append(out, r), nil
}

// Stop makes Run return; it does not wait. Safe to call more than once and
// from any goroutine.
//
// Deprecated: cancel the context given to Run or Start, the one way every
// component of amends stops (see docs/architecture.md, "Names"). It goes
// in the next release.
func (p *Processor) Stop() { p.stopOnce.Do(func() { close(p.stopCh) }) }

// Ready is closed once Run has created its consumers and starts handling
// messages; it stays open if Run fails to start.
func (p *Processor) Ready() <-chan struct{} { return p.ready }

// Closed is closed once Run has returned.
//
// Deprecated: use Wait, which also returns Run's result. It goes in the
// next release.
func (p *Processor) Closed() <-chan struct{} { return p.closed }
