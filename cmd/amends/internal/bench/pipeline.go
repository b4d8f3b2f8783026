package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// waitCount polls count every 100 µs until it reaches target.
func waitCount(ctx context.Context, count func() uint64, target uint64) error {
	t := time.NewTicker(100 * time.Microsecond)
	defer t.Stop()
	deadline := time.Now().Add(time.Minute)
	for count() < target {
		if time.Now().After(deadline) {
			return fmt.Errorf("handled %d of %d within a minute", count(), target)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// publishWindow is how many pipelined publishes one batch keeps
// unacknowledged: eight workers' batches together stay within the client's
// limit of 4000 pending asynchronous publishes.
const publishWindow = 400

// awaitAcks waits for every future, and empties the list.
func awaitAcks(ctx context.Context, futures *[]jetstream.PubAckFuture) error {
	for _, f := range *futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	*futures = (*futures)[:0]
	return nil
}

// publishBatch appends n one-event streams to new aggregates of type typ
// with pipelined publishes, and waits for every acknowledgement.
func publishBatch(ctx context.Context, js jetstream.JetStream, st *jsstore.Store, typ string, n int) error {
	futures := make([]jetstream.PubAckFuture, 0, publishWindow)
	for range n {
		if len(futures) == publishWindow {
			if err := awaitAcks(ctx, &futures); err != nil {
				return err
			}
		}
		s := orderStream(uuid.NewString(), 1)
		s.Aggregate.Type = typ
		data, err := eventstore.Encode(&s)
		if err != nil {
			return err
		}
		subj, err := st.Subject(s.Aggregate)
		if err != nil {
			return err
		}
		m := nats.NewMsg(subj)
		m.Data = data
		m.Header.Set(jsstore.HeaderVersion, "1") // as Append writes it
		f, err := js.PublishMsgAsync(m, jetstream.WithMsgID(s.ID), jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	return awaitAcks(ctx, &futures)
}

// counter is an atomic count usable as a handled function.
type counter struct{ n atomic.Uint64 }

func (c *counter) add()         { c.n.Add(1) }
func (c *counter) load() uint64 { return c.n.Load() }

// lastStop keeps, per worker, how to stop the consumer of its previous
// operation. Safe for concurrent use.
type lastStop struct {
	mu    sync.Mutex
	stops map[int]func()
}

func (l *lastStop) set(w int, stop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stops == nil {
		l.stops = map[int]func(){}
	}
	l.stops[w] = stop
}

// stop stops worker w's previous consumer, if any.
func (l *lastStop) stop(w int) {
	l.mu.Lock()
	stop := l.stops[w]
	delete(l.stops, w)
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// all stops every worker's consumer.
func (l *lastStop) all() {
	l.mu.Lock()
	stops := l.stops
	l.stops = nil
	l.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// discard is the logger of the components a scenario runs: their warnings
// about failures the scenario causes on purpose would drown the output.
var discard = slog.New(slog.DiscardHandler)

// runProcessor registers fn (its handler h) on p, runs p until worker w's
// next operation, which stops it and deletes fn's durable, and waits until
// count reaches n: the amends side of the consuming scenarios.
func (l *lastStop) runProcessor(ctx context.Context, env *Env, st *jsstore.Store, w int, p *processor.Processor, fn processor.Function, h processor.Handler,
	fopts []processor.FunctionOption, count func() uint64, n int) error {
	if err := p.Register(fn, h, fopts...); err != nil {
		return err
	}
	stop, err := startProcessor(ctx, p)
	if err != nil {
		return err
	}
	l.set(w, func() {
		stop()
		_ = env.JS.DeleteConsumer(context.Background(), st.StreamName(benchContext), processor.DurableName(benchContext, fn.Processor))
	})
	return waitCount(ctx, count, uint64(n))
}

// undo is what a scenario's prepare opened so far, closed last first: when
// the prepare fails (onError), or at the Pair's Close (run).
type undo []func()

func (u *undo) add(close func()) { *u = append(*u, close) }

func (u *undo) run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// onError runs u if *err is set; prepare defers it.
func (u *undo) onError(err *error) {
	if *err != nil {
		u.run()
	}
}
