package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// DefaultDurable is the name of the projector's durable consumer.
const DefaultDurable = "amends-views"

// defaultWorkers: each worker waits for the writes of one batch at a
// time; the lanes also spread the decoding over the cores.
const defaultWorkers = 16

// Projector keeps the views bucket current: a durable JetStream consumer
// over the compensation stream that applies each command's events to the
// stored view with aggregate.Evolve.
//
// Ack semantics: a view written, or a stream at or below the stored
// version (skipped) → Ack. A message that can never be projected (it does
// not decode, its history does not load, or the view it makes would not
// read back) is quarantined: recorded in the quarantine (WithQuarantine)
// with its stream, sequence, subject and reason, then Term, counted in
// Stats.Corrupt. Any other error (a KV or store failure, a timeout) →
// Nak with a delay growing from the nak delay with each delivery
// (WithRetry), counted in Stats.Failed, and quarantined once the
// deliveries are exhausted; so poison messages never hold the consumer's
// ack-pending slots for long, and good messages behind them are projected.
// A message a projector received and never settled (it died) is
// redelivered after the consumer's AckWait (DefaultAckWait, 5 s); messages
// a live projector holds, queued or being projected, are kept with
// InProgress meanwhile. Several projectors may share the durable consumer
// (on one or several machines): writes are compare-and-set on the KV
// revision, so the view never goes backwards.
//
// Writes are pipelined: each worker takes the messages queued in its lane
// (up to 256), brings each record's view through that record's streams in
// memory, in order, and publishes all the records' views at once without
// waiting in between, one compare-and-set each; it settles each message
// only once the write holding its effect is acknowledged by the server. A
// write that fails (another writer was faster, the bucket refused it, no
// answer within 10 s) sends its messages through the projection one at a
// time, which reads the view again. A views bucket passed as a wrapper of
// the client's KeyValue, a mirrored bucket, or a JetStream reached through
// an API prefix or domain get that one-at-a-time projection for every
// message.
//
// A Projector is safe for concurrent use; Run it once at a time.
type Projector struct {
	js     jetstream.JetStream
	store  eventstore.Store[jetstream.Msg]
	views  *Views
	bucket *kvstore.Bucket // views, to report the invalid ones to the quarantine
	opts   projectorOptions
	cache  *viewCache
	// putPrefix is the subject prefix of the bucket's keys while writes
	// are pipelined, "" while each goes through views (set by consume
	// before any worker starts).
	putPrefix string

	// announced are the processors whose key (ProcessorKey) it wrote.
	announcedMu sync.Mutex
	announced   map[string]bool

	projected, skipped, rebuilt, corrupt, failed, reprojected atomic.Uint64
	events                                                    [7]atomic.Uint64 // by aggregate.EventNames
}

// ProjectorStats counts what a projector did since it was created.
type ProjectorStats struct {
	// Projected counts streams applied with Evolve.
	Projected uint64
	// Rebuilt counts views rebuilt from a carried state or the history
	// because the stored view was missing or behind by more than one.
	Rebuilt uint64
	// Skipped counts streams at or below the stored version.
	Skipped uint64
	// Corrupt counts terminated messages.
	Corrupt uint64
	// Failed counts messages handed back for redelivery after an error.
	Failed uint64
	// Reprojected counts the times every record was projected again
	// because the views bucket was created again.
	Reprojected uint64
	// Events counts the events of projected and rebuilt streams by name
	// (aggregate.EventNames): failures recorded, prepares, replay results.
	// Redelivered streams are not counted twice by one projector.
	Events map[string]uint64
}

type projectorOptions struct {
	durable       string
	workers       int
	maxAckPending int
	cacheSize     int
	nakDelay      time.Duration
	ackWait       time.Duration
	logger        *slog.Logger
	quarantine    *quarantine.Quarantine // nil: NewProjector makes one
	retry         quarantine.Retry       // First 0: nakDelay
	viewsCheck    time.Duration
}

// DefaultAckWait is the projector consumer's AckWait: how soon the server
// redelivers a message whose projector died before acknowledging it.
// Messages the projector holds longer (queued or being projected) are
// kept with InProgress every third of it.
const DefaultAckWait = 5 * time.Second

// ProjectorOption configures a Projector. An option that cannot be applied
// makes NewProjector return an error wrapping ErrInvalidOption.
type ProjectorOption func(*projectorOptions) error

// WithDurable names the durable consumer (default DefaultDurable).
func WithDurable(name string) ProjectorOption {
	return func(o *projectorOptions) error {
		if name == "" {
			return fmt.Errorf("durable name is empty: %w", ErrInvalidOption)
		}
		o.durable = name
		return nil
	}
}

// WithWorkers sets how many workers project batches at once (default 16).
// Messages of one record always go to the same worker, in order.
func WithWorkers(n int) ProjectorOption {
	return func(o *projectorOptions) error {
		if n < 1 {
			return fmt.Errorf("workers must be at least 1, got %d: %w", n, ErrInvalidOption)
		}
		o.workers = n
		return nil
	}
}

// WithMaxAckPending bounds the messages delivered and not yet acknowledged
// (default 1024). It applies when the consumer is created or updated.
func WithMaxAckPending(n int) ProjectorOption {
	return func(o *projectorOptions) error {
		if n < 1 {
			return fmt.Errorf("max ack pending must be at least 1, got %d: %w", n, ErrInvalidOption)
		}
		o.maxAckPending = n
		return nil
	}
}

// WithViewCache sets how many of the views it wrote last the projector
// remembers (default 16384; 0 turns the cache off). A remembered view is
// updated with one compare-and-set and no read of the bucket.
func WithViewCache(n int) ProjectorOption {
	return func(o *projectorOptions) error {
		if n < 0 {
			return fmt.Errorf("view cache size must be >= 0, got %d: %w", n, ErrInvalidOption)
		}
		o.cacheSize = n
		return nil
	}
}

// WithNakDelay sets how long a message that failed waits before its first
// redelivery (default 1s); the wait doubles with each delivery (WithRetry).
func WithNakDelay(d time.Duration) ProjectorOption {
	return func(o *projectorOptions) error {
		if d < 0 {
			return fmt.Errorf("nak delay must not be negative, got %s: %w", d, ErrInvalidOption)
		}
		o.nakDelay = d
		return nil
	}
}

// WithAckWait sets the consumer's AckWait (default DefaultAckWait; at
// least 1s): a message a dead projector received is redelivered to
// another after it. While a projector holds a message it sends InProgress
// every third of it, so a slow projection is not redelivered meanwhile.
// It applies when the consumer is created or updated.
func WithAckWait(d time.Duration) ProjectorOption {
	return func(o *projectorOptions) error {
		if d < time.Second {
			return fmt.Errorf("ack wait must be at least 1s, got %s: %w", d, ErrInvalidOption)
		}
		o.ackWait = d
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) ProjectorOption {
	return func(o *projectorOptions) error {
		if l == nil {
			return fmt.Errorf("logger is nil: %w", ErrInvalidOption)
		}
		o.logger = l
		return nil
	}
}

// NewProjector returns a projector from store's compensation stream into
// views (see OpenViews). It does no I/O.
func NewProjector(js jetstream.JetStream, store eventstore.Store[jetstream.Msg], views *Views, opts ...ProjectorOption) (*Projector, error) {
	o := projectorOptions{durable: DefaultDurable, workers: defaultWorkers, maxAckPending: 1024, cacheSize: 1 << 14, nakDelay: time.Second, ackWait: DefaultAckWait, logger: slog.Default(), viewsCheck: DefaultViewsCheck}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if err := o.defaultQuarantine(js, store); err != nil {
		return nil, err
	}
	p := &Projector{js: js, store: store, views: views, opts: o, cache: newViewCache(o.cacheSize), announced: map[string]bool{}}
	if views != nil {
		p.bucket = kvstore.Bind(js, views.KeyValue, viewsSpec, kvstore.WithRecorder(o.quarantine), kvstore.WithLogger(o.logger))
	}
	return p, nil
}

// Stats returns the projector's counters.
func (p *Projector) Stats() ProjectorStats {
	return ProjectorStats{
		Projected: p.projected.Load(), Rebuilt: p.rebuilt.Load(), Skipped: p.skipped.Load(),
		Corrupt: p.corrupt.Load(), Failed: p.failed.Load(), Reprojected: p.reprojected.Load(), Events: p.eventCounts(),
	}
}

func (p *Projector) eventCounts() map[string]uint64 {
	out := make(map[string]uint64, len(aggregate.EventNames))
	for i, name := range aggregate.EventNames {
		out[name] = p.events[i].Load()
	}
	return out
}

// ConsumerConfig returns the durable consumer the projector creates or
// updates on the compensation stream.
func (p *Projector) ConsumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       p.opts.durable,
		Description:   "amends: projects ExecutionFailed records into their views",
		FilterSubject: p.store.FilterSubject(aggregate.Context, aggregate.AggregateType),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       p.opts.ackWait,
		MaxDeliver:    -1,
		MaxAckPending: p.opts.maxAckPending,
	}
}

// The backoff between attempts to set up or resume the consumer: doubled
// after each attempt that failed, up to the cap, and reset once a consumer
// ran for longer than the cap.
const (
	consumerBackoffMin = 100 * time.Millisecond
	consumerBackoffMax = 10 * time.Second
)

// Run provisions the compensation stream and the durable consumer, then
// projects until ctx ends. It resumes where the consumer's acknowledgements
// stopped. If the stream or consumer cannot be set up, or the consumer
// stops while ctx is live (deleted, the connection closed), Run logs it and
// sets them up again after a capped backoff (100ms doubling to 10s). It
// returns nil after ctx ended and every worker stopped, or an error wrapping
// eventstore.ErrIncompatible or eventstore.ErrInvalid if the stream's
// configuration can never work. Messages in flight when ctx ends are
// redelivered later.
func (p *Projector) Run(ctx context.Context) error {
	var never error // a stream configuration that can never work
	wait.Restart(ctx, consumerBackoffMin, consumerBackoffMax, p.consume, func(err error, attempt int, backoff time.Duration) bool {
		if errors.Is(err, eventstore.ErrIncompatible) || errors.Is(err, eventstore.ErrInvalid) {
			never = fmt.Errorf("projector: %w", err)
			return false
		}
		p.opts.logger.Warn("projector: consumer stopped; setting it up again", "consumer", p.opts.durable, "err", err, "attempt", attempt, "backoff", backoff)
		return true
	})
	return never
}

// consume sets up the stream and the consumer and projects until ctx ends
// (nil) or the consumer stops (why).
func (p *Projector) consume(ctx context.Context) error {
	if err := p.store.Provision(ctx, aggregate.Context); err != nil {
		return err
	}
	stream := p.store.StreamName(aggregate.Context)
	cons, err := p.js.CreateOrUpdateConsumer(ctx, stream, p.ConsumerConfig())
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", p.opts.durable, stream, err)
	}
	created, err := p.viewsCreated(ctx)
	if err != nil {
		return err
	}
	if cons, err = p.reprojectIfLost(ctx, stream, cons, created); err != nil {
		return err
	}
	p.putPrefix = p.pipelinePrefix(ctx)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go p.watchViews(cctx, cancel, created, done)
	rt, err := inflight.New(inflight.Config{Name: p.opts.durable, Lanes: p.opts.workers, AckWait: p.opts.ackWait,
		MaxAckPending: p.opts.maxAckPending, Batch: laneBatch, Logger: p.opts.logger})
	if err != nil {
		return err
	}
	err = rt.Consume(cctx, cctx, cons, func(ctx context.Context, _ *inflight.Lane, msgs []jetstream.Msg) { p.handleBatch(ctx, msgs) })
	if cause := context.Cause(cctx); ctx.Err() == nil && errors.Is(cause, errViewsRecreated) {
		return cause
	}
	return err
}
