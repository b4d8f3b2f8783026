package processor

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/quarantine"
)

// Option configures a Processor. An option that cannot be applied makes
// New return an error wrapping ErrInvalidOption.
type Option func(*options) error

type options struct {
	recorder        FailureRecorder
	records         Records
	concurrency     int
	replayLanes     int
	laneBuffer      int
	maxAckPending   int
	ackWait         time.Duration
	nakDelay        time.Duration
	shutdownTimeout time.Duration
	deliverNew      bool
	pinned          bool
	retry           Retry
	clock           aggregate.Clock
	sleep           Sleeper
	sleeperSet      bool // sleep is an injected one: after waits through it
	logger          *slog.Logger
	stateCache      int
	replay          bool
	quarantine      *quarantine.Quarantine // nil: New makes one
	replayRetry     quarantine.Retry       // First 0: nakDelay
	holdReplicas    int
	rangeReplays    bool
	build           *buildConfig // nil: no build registry (build.go)
	tracer          trace.Tracer // WithTracerProvider (trace.go)
	tracerSet       bool
	circuitPolicy   circuit.Policy // WithCircuitPolicy (circuits.go)
	circuitStore    *circuit.Store // nil: Run opens the default bucket
	serverSkew      time.Duration  // WithServerSkew (progress.go)
	failureSummary  time.Duration  // WithFailureSummary (digest.go)
}

func defaultOptions() options {
	return options{
		concurrency:     16,
		replayLanes:     4,
		laneBuffer:      64,
		ackWait:         30 * time.Second,
		nakDelay:        5 * time.Second,
		serverSkew:      DefaultServerSkew,
		failureSummary:  DefaultFailureSummary,
		shutdownTimeout: 30 * time.Second,
		retry:           DefaultRetry,
		clock:           aggregate.ClockFunc(time.Now),
		sleep:           Sleep,
		logger:          slog.Default(),
		stateCache:      4096,
		replay:          true,
		tracer:          defaultTracer(),
		circuitPolicy:   circuit.DefaultPolicy,
	}
}

func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidOption)
}

// WithRecorder sets the FailureRecorder that records failures and replay
// results (usually a *recorder.Recorder). Without one, failures are logged,
// counted and acked (outcome FAILURE_UNRECORDED) and replays are not
// consumed.
func WithRecorder(r FailureRecorder) Option {
	return func(o *options) error { o.recorder = r; return nil }
}

// WithRecords lets the replay consumer read records (an
// *aggregate.Service), so it skips a prepared attempt that is no longer
// current instead of running the function for a result that would be
// rejected, and follows a ChangeFunction made after the prepare. A reader
// with GetDelivered (as *aggregate.Service has) is given the delivered
// prepare and need not read the record again when nothing follows it.
func WithRecords(r Records) Option {
	return func(o *options) error { o.records = r; return nil }
}

// WithConcurrency sets how many lanes each processor's consumer has
// (default 16): messages are spread over lanes by aggregate, each lane
// handles its messages one at a time in stream order.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if !bounds.Within(n, 1, 4096) {
			return invalidOption("concurrency must be between 1 and 4096, got %d", n)
		}
		o.concurrency = n
		return nil
	}
}

// WithReplayConcurrency sets how many replays run at once (default 4).
func WithReplayConcurrency(n int) Option {
	return func(o *options) error {
		if !bounds.Within(n, 1, 1024) {
			return invalidOption("replay concurrency must be between 1 and 1024, got %d", n)
		}
		o.replayLanes = n
		return nil
	}
}

// WithMaxAckPending sets the consumers' MaxAckPending: how many messages
// may be delivered and not yet acked (default: 64 per lane, at least 1000).
// With several instances on one durable it bounds their total.
func WithMaxAckPending(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return invalidOption("max ack pending must be >= 1, got %d", n)
		}
		o.maxAckPending = n
		return nil
	}
}

// WithAckWait sets the consumers' AckWait (default 30 s). A handler running
// longer keeps its message with InProgress every third of it.
func WithAckWait(d time.Duration) Option {
	return func(o *options) error {
		if d < 100*time.Millisecond {
			return invalidOption("ack wait must be at least 100ms, got %s", d)
		}
		o.ackWait = d
		return nil
	}
}

// WithNakDelay sets how long a message whose failure could not be recorded
// waits before its redelivery (default 5 s). A replay message waits that
// long before its first redelivery, then longer (WithReplayRetry).
func WithNakDelay(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return invalidOption("nak delay must be >= 0, got %s", d)
		}
		o.nakDelay = d
		return nil
	}
}

// DefaultServerSkew is WithServerSkew's default.
const DefaultServerSkew = 2 * time.Second

// WithServerSkew sets how far apart the clocks of the NATS servers may be
// (0 to a minute; default DefaultServerSkew). An Ordered function's
// progress written before the version it counts as dispatched was
// appended, by more than this, is one no instance wrote: both times are
// the servers' (the progress's revision and the event's message).
func WithServerSkew(d time.Duration) Option {
	return func(o *options) error {
		if !bounds.Within(d, 0, time.Minute) {
			return invalidOption("server skew must be from 0 to 1m, got %s", d)
		}
		o.serverSkew = d
		return nil
	}
}

// WithShutdownTimeout bounds how long Run, once stopping, lets running
// handlers finish (default 30 s). Handlers still running then see their
// context cancelled, and their messages are left for redelivery.
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return invalidOption("shutdown timeout must be >= 0, got %s", d)
		}
		o.shutdownTimeout = d
		return nil
	}
}

// WithDeliverNew makes a newly created durable consumer start at the end of
// the stream instead of its beginning. It applies only when the durable is
// created: an existing durable keeps its position.
func WithDeliverNew() Option {
	return func(o *options) error { o.deliverNew = true; return nil }
}

// WithPinnedClient makes the processors' consumers use JetStream's pinned
// client priority policy: of several instances, one at a time receives all
// messages (the others take over if it stops pulling), so per-aggregate
// order holds across instances at the price of scale-out. See the package
// documentation.
func WithPinnedClient() Option {
	return func(o *options) error { o.pinned = true; return nil }
}

// WithImmediateRetry sets the default immediate retry policy of EVENT
// functions (default DefaultRetry).
func WithImmediateRetry(r Retry) Option {
	return func(o *options) error {
		if err := r.validate(); err != nil {
			return invalidOption("%v", err)
		}
		o.retry = r
		return nil
	}
}

// WithClock sets the clock of execution times (default the system clock).
func WithClock(c aggregate.Clock) Option {
	return func(o *options) error {
		if c == nil {
			return invalidOption("clock is nil")
		}
		o.clock = c
		return nil
	}
}

// WithSleeper sets how immediate retries wait (default Sleep).
func WithSleeper(s Sleeper) Option {
	return func(o *options) error {
		if s == nil {
			return invalidOption("sleeper is nil")
		}
		o.sleep, o.sleeperSet = s, true
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return invalidOption("logger is nil")
		}
		o.logger = l
		return nil
	}
}

// WithStateCache sets how many aggregates' latest states STATE_EVENT
// functions keep in memory (default 4096); a miss rebuilds the state from
// the aggregate's history.
func WithStateCache(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return invalidOption("state cache must be >= 0, got %d", n)
		}
		o.stateCache = n
		return nil
	}
}

// WithoutReplay turns the replay consumer off even with a recorder, e.g.
// when another instance of the service replays.
func WithoutReplay() Option {
	return func(o *options) error { o.replay = false; return nil }
}
