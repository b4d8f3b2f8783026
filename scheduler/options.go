package scheduler

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/retention"
)

// Defaults of the options; period, initial delay and batch are Wow's.
const (
	DefaultPeriod       = 60 * time.Second
	DefaultInitialDelay = 60 * time.Second
	DefaultBatch        = 100
	DefaultConcurrency  = 8
	DefaultLeaseKey     = "scheduler"
	// DefaultRate is the most records a second a pass prepares once it
	// found more due than one batch: the pace of the recovery drain
	// (DefaultDrainRate), what one instance's replay consumer sustains
	// against a dependency answering in 20 ms. A pass so keeps up with
	// what comes due (15 failures a second need 900 prepares a minute, not
	// Wow's 100), and spreads the replays of a large backlog instead of
	// firing them back to back.
	DefaultRate = DefaultDrainRate
)

type options struct {
	period, initialDelay time.Duration
	batch, concurrency   int
	rate                 float64
	clock, leaseClock    aggregate.Clock
	ticks                <-chan time.Time
	key, instance        string
	renewEvery, margin   time.Duration
	logger               *slog.Logger
	backoffMin           time.Duration
	backoffMax           time.Duration
	parkRules            RuleSource         // park.go
	parkRelease          *parkReleaseConfig // parkrelease.go
	drain                *DrainConfig       // drain.go
	tracer               trace.Tracer       // trace.go; nil: the global provider's
	reprojector          projection.Reprojector
	retention            *retention.Sweeper // retention.go
	partitions           *Partitions        // partitions.go: the passes prepare the records of the partitions held
}

// WithPartitions makes the passes prepare the due records of the
// partitions p holds (Partitions.Owns), on every instance that holds one,
// instead of every due record on the holder of the scheduler's lease. A
// record is checked again just before its prepare is sent. The work kept
// per processor, its functions' recovery drains and probes and its
// releases of parked records, runs on the instance that holds the
// processor's first partition (Partitions.Leads); the holders of its
// other parts follow its drains, so that their passes leave the drained
// records alone. The retention sweeps stay with the holder of the lease:
// a sweep is one batch of the whole bucket, kept in one key. Run p beside
// the Scheduler.
func WithPartitions(p *Partitions) Option {
	return func(o *options) error { o.partitions = p; return notNil("partitions", p) }
}

// WithReprojector hands the due records the index lists but that do not
// exist (their prepare answers not found: a view written by something
// else) to r, the projector, which deletes their views or projects them
// again. Without it they only back off.
func WithReprojector(r projection.Reprojector) Option {
	return func(o *options) error { o.reprojector = r; return notNil("reprojector", r) }
}

// Option configures a Scheduler. An option that cannot be applied makes
// New return an error wrapping ErrInvalidOption.
type Option func(*options) error

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s must be positive, got %s: %w", name, d, ErrInvalidOption)
	}
	return nil
}

// WithPeriod sets the time between passes (default DefaultPeriod).
func WithPeriod(d time.Duration) Option {
	return func(o *options) error { o.period = d; return positive("period", d) }
}

// WithInitialDelay sets the time before the first pass (default
// DefaultInitialDelay; 0 starts at once).
func WithInitialDelay(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("initial delay must not be negative, got %s: %w", d, ErrInvalidOption)
		}
		o.initialDelay = d
		return nil
	}
}

// WithBatch sets how many due records one pass prepares at most (default
// DefaultBatch).
func WithBatch(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("batch must be at least 1, got %d: %w", n, ErrInvalidOption)
		}
		o.batch = n
		return nil
	}
}

// WithRate sets the most records a second a pass prepares once it found
// more due than one batch (default DefaultRate): the pass prepares batch
// after batch, each no sooner than the last one's size at that rate after
// it, until nothing more is due, a batch prepares nothing new, or a period
// has passed. A rate from 0.1 to circuit.MaxDrainRate records/s; Wow's scheduler, one batch
// a period, is WithRate of batch/period.
func WithRate(perSecond float64) Option {
	return func(o *options) error {
		if math.IsNaN(perSecond) || !bounds.Within(perSecond, 0.1, circuit.MaxDrainRate) {
			return fmt.Errorf("rate must be from 0.1 to %d records/s, got %v: %w", circuit.MaxDrainRate, perSecond, ErrInvalidOption)
		}
		o.rate = perSecond
		return nil
	}
}

// WithConcurrency sets how many PrepareCompensation commands run at once
// (default DefaultConcurrency).
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("concurrency must be at least 1, got %d: %w", n, ErrInvalidOption)
		}
		o.concurrency = n
		return nil
	}
}

// WithClock sets the clock that gives each pass its "now" (default: the
// system clock). The command service decides with its own clock; give both
// the same one.
func WithClock(c aggregate.Clock) Option {
	return func(o *options) error { o.clock = c; return notNil("clock", c) }
}

// WithTicks makes the scheduler run a pass for every value received from
// ticks instead of on its period and initial delay: for tests, or to drive
// it from elsewhere.
func WithTicks(ticks <-chan time.Time) Option {
	return func(o *options) error { o.ticks = ticks; return notNil("ticks", ticks) }
}

// WithLeaseKey names the lease in the bucket (default DefaultLeaseKey):
// schedulers with the same key exclude each other.
func WithLeaseKey(key string) Option {
	return func(o *options) error {
		if key == "" {
			return fmt.Errorf("lease key is empty: %w", ErrInvalidOption)
		}
		o.key = key
		return nil
	}
}

// WithInstance names this instance in the lease (default a random id).
func WithInstance(name string) Option {
	return func(o *options) error {
		if name == "" {
			return fmt.Errorf("instance name is empty: %w", ErrInvalidOption)
		}
		o.instance = name
		return nil
	}
}

// WithRenewal sets how often the holder renews the lease (default a third
// of the TTL) and the safety margin before the lease's expiry at which a
// holder that could not renew stops preparing (default a fifth of the
// TTL). New checks that renewEvery + margin < TTL.
func WithRenewal(renewEvery, margin time.Duration) Option {
	return func(o *options) error {
		o.renewEvery, o.margin = renewEvery, margin
		if err := positive("renew interval", renewEvery); err != nil {
			return err
		}
		return positive("safety margin", margin)
	}
}

// WithLeaseClock sets the clock the lease's validity is measured with
// (default: the system clock). It must run at the speed of the NATS
// servers' clocks, which expire the lease; it is not the pass clock.
func WithLeaseClock(c aggregate.Clock) Option {
	return func(o *options) error { o.leaseClock = c; return notNil("lease clock", c) }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error { o.logger = l; return notNil("logger", l) }
}

func notNil[T comparable](name string, v T) error {
	var zero T
	if v == zero {
		return fmt.Errorf("%s is nil: %w", name, ErrInvalidOption)
	}
	return nil
}

// WithFailureBackoff sets how long passes skip a record whose prepare
// failed for another reason than a rejection: min after the first failure,
// doubling with each further one, at most max (defaults
// DefaultFailureBackoff and DefaultMaxFailureBackoff), measured on the
// pass clock (WithClock). Both must be positive and min at most max.
func WithFailureBackoff(min, max time.Duration) Option {
	return func(o *options) error {
		o.backoffMin, o.backoffMax = min, max
		if err := positive("failure backoff", min); err != nil {
			return err
		}
		return positive("maximum failure backoff", max)
	}
}
