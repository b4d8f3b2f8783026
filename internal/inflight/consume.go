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
	// Batch bounds how many messages of one worker's queue ConsumeBatch
	// hands to one call of its handler (0 or 1: one at a time).
	Batch int
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
	l.Batch = 1
	return ConsumeBatch(ctx, cons, l, func(ctx context.Context, msgs []jetstream.Msg) {
		for _, m := range msgs {
			handle(ctx, m)
		}
	})
}

// ConsumeBatch is Consume with a handler of batches: each worker hands
// its handler what has queued up for it, up to l.Batch messages, oldest
// first, without waiting for more. A batch holds messages of the worker's
// subjects only, and a subject's messages arrive in order, batch after
// batch: the next batch of a worker starts after its handler returned.
// handle must settle every message of its batch.
func ConsumeBatch(ctx context.Context, cons jetstream.Consumer, l Lanes, handle func(context.Context, []jetstream.Msg)) error {
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	stopping := make(chan struct{})
	held := New()
	var hb sync.WaitGroup
	hb.Go(func() { held.Heartbeat(stopping, l.AckWait/3) })
	work := make([]chan jetstream.Msg, max(l.Workers, 1))
	batch := max(l.Batch, 1)
	var wg sync.WaitGroup
	for i := range work {
		work[i] = make(chan jetstream.Msg, max(64, batch))
		wg.Go(func() { lane(ctx, work[i], batch, held, handle) })
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

// lane hands the messages of work to handle, in batches of what has
// queued up (at most size), until work is closed and empty.
func lane(ctx context.Context, work <-chan jetstream.Msg, size int, held *Set, handle func(context.Context, []jetstream.Msg)) {
	msgs := make([]jetstream.Msg, 0, size)
	for m := range work {
		msgs = append(msgs[:0], m)
		open := true
	more:
		for open && len(msgs) < size {
			select {
			case m, ok := <-work:
				if !ok {
					open = false
					break more
				}
				msgs = append(msgs, m)
			default:
				break more
			}
		}
		handle(ctx, msgs)
		for _, m := range msgs {
			held.Drop(m)
		}
		clear(msgs)
		if !open {
			return
		}
	}
}
