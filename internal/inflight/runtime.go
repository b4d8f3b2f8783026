package inflight

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrConsumerEnded: the consumer stopped delivering on its own.
var ErrConsumerEnded = errors.New("the consumer stopped")

// Config is how a Runtime consumes.
type Config struct {
	// Name names the consumer in errors and debug logs.
	Name string
	// Lanes is how many handlers run at once (at least 1). Messages of one
	// subject always go to the same lane, in order.
	Lanes int
	// AckWait is the consumer's; held messages get InProgress every third
	// of it.
	AckWait time.Duration
	// MaxAckPending is the consumer's: the client buffers no more than
	// that (the server delivers no more).
	MaxAckPending int
	// Batch bounds how many messages of one lane's queue one call of the
	// handler gets (0 or 1: one at a time).
	Batch int
	// PullOpts are more options of the pull (a priority group).
	PullOpts []jetstream.PullConsumeOpt
	// Logger receives the consumer's errors at Debug (nil: discarded).
	Logger *slog.Logger
	// Counters, where set, count the messages received and how they were
	// settled.
	Counters Counters
}

// Counters are where a Runtime counts; nil fields are not counted.
type Counters struct {
	// Delivered counts deliveries received, redeliveries of a message
	// still held included.
	Delivered *atomic.Uint64
	// Acked, Naked and Terminated count the messages settled so;
	// AckErrors the settlements the client could not send.
	Acked, Naked, Terminated, AckErrors *atomic.Uint64
}

// Handler handles a batch of messages of lane l (each a *Msg) and must
// settle each, now or later (from any goroutine, or from work it posts to
// l). Messages of one subject arrive in order, batch after batch: the
// lane's next batch starts after the handler returned.
type Handler func(ctx context.Context, l *Lane, msgs []jetstream.Msg)

// Runtime consumes durable consumers through lanes and keeps every message
// it holds leased until it is settled. One Runtime runs one Consume at a
// time; its Held count spans them. Safe for concurrent use.
type Runtime struct {
	cfg  Config
	held atomic.Int64

	mu      sync.Mutex
	lanes   []*Lane       // those of the Consume running, if one is
	started chan struct{} // closed once lanes are set
}

// pullExpiry bounds one pull request on the server. Should the client ever
// lose track of its outstanding pulls, its missed-heartbeat check (half of
// this) pulls again within seconds instead of the default 30 s.
const pullExpiry = 5 * time.Second

// New returns a Runtime of cfg; Lanes below 1 is 1, and AckWait and
// MaxAckPending must be positive.
func New(cfg Config) (*Runtime, error) {
	if cfg.AckWait <= 0 || cfg.MaxAckPending <= 0 {
		return nil, fmt.Errorf("inflight %s: ack wait and max ack pending must be positive, got %s and %d", cfg.Name, cfg.AckWait, cfg.MaxAckPending)
	}
	cfg.Lanes, cfg.Batch = max(cfg.Lanes, 1), max(cfg.Batch, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runtime{cfg: cfg, started: make(chan struct{})}, nil
}

// Held returns how many messages the runtime holds: received and not
// settled.
func (r *Runtime) Held() int { return int(r.held.Load()) }

// Capacity returns the consumer's MaxAckPending, the most messages the
// runtime can hold.
func (r *Runtime) Capacity() int { return r.cfg.MaxAckPending }

// Post queues fn on the lane that the messages of subject go to, in the
// Consume running, after what is queued there already: work that must
// run in order with those messages (a call of a function that no message
// of the consumer carries). fn gets the handlers' context and its lane.
// When no Consume runs, Post waits for one to start, or for ctx to end.
// It returns the lane, or false when ctx ended first or the lane has
// stopped; fn never runs then, nor when Consume stops before it started
// (select on the lane's Stopped to learn that).
func (r *Runtime) Post(ctx context.Context, subject string, fn func(ctx context.Context, l *Lane)) (*Lane, bool) {
	for {
		r.mu.Lock()
		lanes, started := r.lanes, r.started
		r.mu.Unlock()
		if lanes != nil {
			l := lanes[laneOf(subject, len(lanes))]
			return l, l.Post(func(ctx context.Context) { fn(ctx, l) })
		}
		select {
		case <-started:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// Consume hands the messages of cons to the lanes until stopping ends
// (nil) or the consumer stops on its own (deleted, connection closed:
// ErrConsumerEnded or the client's error). Handlers run with work, which
// may outlive stopping so that they can finish. On the way out, queued
// messages no handler started are nak'ed, posted work not started is
// dropped, running handlers are waited for, and every message still held
// is nak'ed; Consume returns only after every goroutine it started has.
func (r *Runtime) Consume(stopping, work context.Context, cons jetstream.Consumer, h Handler) error {
	n := r.cfg.Lanes
	lanes := make([]*Lane, n)
	shards := make([]*shard, n)
	var wg sync.WaitGroup
	for i := range lanes {
		lanes[i], shards[i] = newLane(i), newShard(r)
		wg.Go(func() {
			defer close(lanes[i].stopped)
			r.run(stopping, work, lanes[i], h)
		})
	}
	r.mu.Lock()
	r.lanes = lanes
	close(r.started)
	r.mu.Unlock()
	hbDone := make(chan struct{})
	var hb sync.WaitGroup
	hb.Go(func() { heartbeat(shards, hbDone, r.cfg.AckWait/3) })

	lost := make(chan error, 1)
	opts := append([]jetstream.PullConsumeOpt{jetstream.PullMaxMessages(min(r.cfg.MaxAckPending, 1000)), jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConnectionClosed) {
				select {
				case lost <- err:
				default:
				}
			}
			r.cfg.Logger.Debug("consumer", "consumer", r.cfg.Name, "err", err)
		})}, r.cfg.PullOpts...)
	delivered := r.cfg.Counters.Delivered
	// The callback only holds the message and queues it: it never blocks,
	// so the subscription keeps up with the server's messages and status.
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if delivered != nil {
			delivered.Add(1)
		}
		i := laneOf(m.Subject(), n)
		if held, fresh := shards[i].add(m); fresh && !lanes[i].push(item{m: held}) {
			_ = held.Nak() // stopping: let another instance have it now
		}
	}, opts...)
	if err == nil {
		select {
		case <-stopping.Done():
			// What the client buffered still reaches the callback, to be
			// nak'ed with the rest rather than wait out AckWait.
			cc.Drain()
		case err = <-lost:
			cc.Stop()
		case <-cc.Closed():
			err = ErrConsumerEnded
		}
		<-cc.Closed()
	} else {
		err = fmt.Errorf("consume %s: %w", r.cfg.Name, err)
	}
	r.mu.Lock()
	r.lanes, r.started = nil, make(chan struct{})
	r.mu.Unlock()
	for _, l := range lanes {
		l.close()
	}
	wg.Wait()
	// Every message still held, queued or left waiting by its handler, is
	// nak'ed in stream order, which is the order the server redelivers
	// them in: a subject's messages come back in their order.
	var left []*Msg
	for _, s := range shards {
		left = s.all(left)
	}
	slices.SortFunc(left, func(a, b *Msg) int { return cmp.Compare(a.key, b.key) })
	for _, m := range left {
		_ = m.Nak()
	}
	close(hbDone)
	hb.Wait()
	if stopping.Err() != nil {
		return nil
	}
	return err
}

// run hands lane l's items to h until l is closed and empty; once stopping
// has ended, queued messages are left to Consume's nak and posted work is
// dropped.
func (r *Runtime) run(stopping, work context.Context, l *Lane, h Handler) {
	batch := make([]jetstream.Msg, 0, r.cfg.Batch)
	for {
		var fn func(context.Context)
		var ok bool
		batch, fn, ok = l.pop(batch[:0], r.cfg.Batch)
		if !ok {
			return
		}
		switch {
		case stopping.Err() != nil:
			// Not started: nak'ed, in order, once every lane stopped.
		case fn != nil:
			fn(work)
		default:
			h(work, l, batch)
		}
		clear(batch)
	}
}

// heartbeat sends InProgress, every interval until done is closed, for
// each message held since before the last tick, so the server restarts its
// AckWait rather than redeliver it.
func heartbeat(shards []*shard, done <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var due []*Msg
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		for _, s := range shards {
			due = s.due(due[:0])
			for _, m := range due {
				_ = m.InProgress() // an already settled message refuses it; a lost one is redelivered
			}
		}
		clear(due)
	}
}

// laneOf hashes a subject (FNV-1a) to one of n lanes.
func laneOf(subject string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(subject); i++ {
		h ^= uint32(subject[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}
