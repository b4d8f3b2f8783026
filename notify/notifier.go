package notify

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// DefaultDurable is the name of the notifier's durable consumer on the
// compensation stream; the batch consumer is DefaultDurable + "-batches".
const DefaultDurable = "amends-notify"

// ProcessorName is the processor of the notifier's own function: a
// delivery that failed after the retry limit is recorded as an
// ExecutionFailed record of the function ProcessorName/"deliver-<endpoint>".
// The notifier never notifies about records of this processor.
const ProcessorName = "amends-notify"

// DefaultAckWait is the consumers' AckWait; messages being delivered are
// kept with InProgress every third of it.
const DefaultAckWait = 10 * time.Second

// Recorder executes record commands; *aggregate.Service satisfies it.
type Recorder interface {
	Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error)
}

// Clock tells the time; *fakeclock.Clock satisfies it.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

type options struct {
	durable    string
	workers    int
	ackWait    time.Duration
	resolver   Resolver
	clock      Clock
	logger     *slog.Logger
	quarantine *quarantine.Quarantine
	replicas   int
	storage    jetstream.StorageType
	digestTick time.Duration
	retry      quarantine.Retry
}

// Option configures a Notifier. An option that cannot be applied makes New
// return an error wrapping ErrInvalidConfig.
type Option func(*options) error

// WithDurable names the durable consumer (default DefaultDurable).
func WithDurable(name string) Option {
	return func(o *options) error {
		if name == "" {
			return fmt.Errorf("durable name is empty: %w", ErrInvalidConfig)
		}
		o.durable = name
		return nil
	}
}

// WithWorkers sets how many messages are delivered at once (default 64);
// messages of one record go to one worker, in order.
func WithWorkers(n int) Option {
	return func(o *options) error {
		if !bounds.Within(n, 1, 1024) {
			return fmt.Errorf("workers %d is outside 1 to 1024: %w", n, ErrInvalidConfig)
		}
		o.workers = n
		return nil
	}
}

// WithAckWait sets the consumers' AckWait (default DefaultAckWait, at
// least 1s): how soon a message a dead notifier held is redelivered.
func WithAckWait(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Second {
			return fmt.Errorf("ack wait %s is below 1s: %w", d, ErrInvalidConfig)
		}
		o.ackWait = d
		return nil
	}
}

// WithResolver sets the SSRF guard's resolver (default net.DefaultResolver).
func WithResolver(r Resolver) Option {
	return func(o *options) error { o.resolver = r; return nil }
}

// WithClock sets the clock of signatures, dedup windows and digests.
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidConfig)
		}
		o.clock = c
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("logger is nil: %w", ErrInvalidConfig)
		}
		o.logger = l
		return nil
	}
}

// WithQuarantine sets where messages that can never be handled are
// recorded before they are terminated (default: a Quarantine on js).
func WithQuarantine(q *quarantine.Quarantine) Option {
	return func(o *options) error { o.quarantine = q; return nil }
}

// WithBuckets sets the replicas and storage of the dedup and digest
// buckets when they are created (default 1, file).
func WithBuckets(replicas int, storage jetstream.StorageType) Option {
	return func(o *options) error {
		if !bounds.Within(replicas, 1, 5) {
			return fmt.Errorf("replicas %d is outside 1 to 5: %w", replicas, ErrInvalidConfig)
		}
		o.replicas, o.storage = replicas, storage
		return nil
	}
}

// WithDigestTick sets how often the notifier checks whether a digest is due
// (default 10s).
func WithDigestTick(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("digest tick %s is not positive: %w", d, ErrInvalidConfig)
		}
		o.digestTick = d
		return nil
	}
}

// Notifier delivers notifications of record events (see the package doc).
// It is safe for concurrent use; Run it once at a time. Several notifiers
// (servers) may share its consumers and buckets.
type Notifier struct {
	js      jetstream.JetStream
	store   eventstore.Store[jetstream.Msg]
	rec     Recorder
	cfg     *Config
	opts    options
	guard   *Guard
	clients map[string]*http.Client
	metrics *Metrics

	mu     sync.Mutex
	dedup  *kvstore.Store[claim]
	digest *kvstore.Store[digestEntry]
}

// New returns a notifier for cfg (see LoadConfig) on the compensation
// stream of store, recording failed deliveries with rec. It does no I/O.
func New(js jetstream.JetStream, store eventstore.Store[jetstream.Msg], rec Recorder, cfg *Config, opts ...Option) (*Notifier, error) {
	o := options{durable: DefaultDurable, workers: 64, ackWait: DefaultAckWait, clock: systemClock{}, logger: slog.Default(),
		replicas: 1, storage: jetstream.FileStorage, digestTick: 10 * time.Second}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if cfg == nil || len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("the config has no endpoint: %w", ErrInvalidConfig)
	}
	if o.quarantine == nil && js != nil {
		q, err := quarantine.New(js, quarantine.WithLogger(o.logger, 0))
		if err != nil {
			return nil, err
		}
		o.quarantine = q
	}
	n := &Notifier{js: js, store: store, rec: rec, cfg: cfg, opts: o, metrics: newMetrics(), clients: map[string]*http.Client{}}
	n.guard = NewGuard(o.resolver, cfg.AllowHosts)
	n.guard.refused = n.metrics.refused.Inc
	for i := range cfg.Endpoints {
		e := &cfg.Endpoints[i]
		n.clients[e.Name] = n.guard.Client(e.Timeout.Duration)
	}
	return n, nil
}

// Metrics returns the notifier's metrics, a prometheus.Collector.
func (n *Notifier) Metrics() *Metrics { return n.metrics }

// Run opens the dedup (and digest) buckets, then delivers until ctx ends:
// record events from the durable consumer on the compensation stream,
// batch results from the batch bucket's stream, and digests when one is
// configured. A consumer that stops is set up again after a capped
// backoff. It returns nil after ctx ended and everything it started
// stopped. Messages in flight then are redelivered later.
func (n *Notifier) Run(ctx context.Context) error {
	if err := n.open(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		n.loop(ctx, n.opts.durable, func(ctx context.Context) error {
			return n.consume(ctx, n.store.StreamName(aggregate.Context), n.recordConsumer(), n.handleRecord)
		})
	})
	if n.routesBatches() {
		wg.Go(func() {
			n.loop(ctx, n.opts.durable+"-batches", func(ctx context.Context) error {
				return n.consume(ctx, batchStream, n.batchConsumer(), n.handleBatch)
			})
		})
	}
	if n.routesCircuits() {
		wg.Go(func() { n.loop(ctx, n.opts.durable+"-circuits", n.consumeCircuits) })
	}
	if n.cfg.Digest != nil {
		wg.Go(func() { n.digestLoop(ctx) })
	}
	wg.Wait()
	return nil
}

// open opens the buckets, retrying until ctx ends.
func (n *Notifier) open(ctx context.Context) error {
	backoff := consumerBackoffMin
	for {
		err := n.openOnce(ctx)
		if err == nil {
			return nil
		}
		n.opts.logger.Warn("notifier: cannot open its buckets; trying again", "err", err, "backoff", backoff)
		if wait.Sleep(ctx, backoff) != nil {
			return ctx.Err()
		}
		backoff = min(2*backoff, consumerBackoffMax)
	}
}

func (n *Notifier) openOnce(ctx context.Context) error {
	kopts := []kvstore.Option{kvstore.WithRecorder(n.opts.quarantine), kvstore.WithLogger(n.opts.logger), kvstore.WithClock(n.opts.clock.Now)}
	d, err := openDedup(ctx, n.js, n.opts.replicas, n.opts.storage, kopts...)
	if err != nil {
		return err
	}
	var g *kvstore.Store[digestEntry]
	if n.cfg.Digest != nil {
		if g, err = openDigest(ctx, n.js, n.opts.replicas, n.opts.storage, kopts...); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.dedup, n.digest = d, g
	n.mu.Unlock()
	return nil
}

func (n *Notifier) routesBatches() bool {
	probe := Notification{Type: TypeBatchCompleted}
	return len(n.cfg.routes(&probe)) > 0
}
