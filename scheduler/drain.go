package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/rollout"
)

// Drain defaults.
const (
	DefaultDrainCanary = 1
	// DefaultDrainThreshold is the share of a step's refused records that
	// must succeed for the next step to double: one half, as the circuit
	// judges (circuit.DefaultFailureRatio), since up to half of any events
	// may fail for their own reason; the refused records of bad events
	// fail again once the dependency is back, and must not slow the drain
	// of the healthy ones. A dead dependency makes them all fail, and the
	// circuit opens again on those fresh calls.
	DefaultDrainThreshold = 0.5
	// DefaultDrainRate is the most records per second a drain prepares for
	// one function: what the replay consumer of one instance sustains at
	// its default concurrency (4 replays at once) against a dependency that
	// answers in 20 ms. A drain never prepares faster than its steps
	// settle, so a slower dependency, or one replay consumer behind,
	// drains at its own pace below this; a faster one can be given more
	// (DrainPolicy.Rate, amends serve --drain-rate).
	DefaultDrainRate = 200.0
	// DefaultDrainTick is how often drains advance.
	DefaultDrainTick = 200 * time.Millisecond
	// DefaultProbeGrace is how long after a cool-down ends the drain waits
	// for a live event to probe the circuit before it prepares a replay
	// as the probe.
	DefaultProbeGrace = time.Second
)

// DrainPolicy says how the records an outage left are prepared once the
// circuit closes: Canary records first, then steps that double while at
// least Threshold of the last one's refused records succeeded, up to Rate records per
// second (and the room in the replay consumer, DrainConfig.Capacity); a
// step below the threshold halves the step and the rate, and a canary
// below it waits the circuit's cool-down and tries the next records (the
// rollout.Adaptive policy). Zero fields take the defaults.
type DrainPolicy struct {
	Canary     int
	Threshold  float64
	Rate       float64
	Tick       time.Duration
	ProbeGrace time.Duration
}

// CircuitSource gives the circuits; *circuit.Watcher satisfies it (Run it
// beside the scheduler).
type CircuitSource interface {
	List() []circuit.State
}

var _ CircuitSource = (*circuit.Watcher)(nil)

// ReplayCapacity tells how many more replays the replay consumer of a
// context can take now (its MaxAckPending less what it holds and what
// waits for it); a drain step is no larger. An error or a negative answer
// means none.
type ReplayCapacity func(ctx context.Context, context string) (int, error)

// DrainConfig is what the recovery drains need (WithDrains).
type DrainConfig struct {
	// Circuits are the functions' circuits (required).
	Circuits CircuitSource
	// Store, if set, lets a failed canary open the circuit again; the
	// cool-down is CircuitPolicy's (circuit.DefaultPolicy if zero).
	Store         *circuit.Store
	CircuitPolicy circuit.Policy
	// Records reads the records (projection.Index, required).
	Records RecordLister
	// Progress keeps the drains' progress (required; circuit.OpenDrains).
	Progress *circuit.Drains
	Policy   DrainPolicy
	// Capacity, if set, bounds each step by the room in the replay
	// consumer.
	Capacity ReplayCapacity
	// Ticks, if set, advance the drains instead of every Policy.Tick
	// (tests).
	Ticks <-chan time.Time
}

// WithDrains makes the lease holder (with WithPartitions, the holder of
// each function's processor's first partition) run the recovery drains of
// the circuits in c (see the package documentation, "Circuits and
// recovery drains"). Invalid settings return an error wrapping ErrInvalidOption.
func WithDrains(c DrainConfig) Option {
	return func(o *options) error {
		if c.Circuits == nil || c.Records == nil || c.Progress == nil {
			return fmt.Errorf("drains need the circuits, a record lister and a progress bucket: %w", ErrInvalidOption)
		}
		p := &c.Policy
		if p.Canary == 0 {
			p.Canary = DefaultDrainCanary
		}
		if p.Threshold == 0 {
			p.Threshold = DefaultDrainThreshold
		}
		if p.Rate == 0 {
			p.Rate = DefaultDrainRate
		}
		if p.Tick == 0 {
			p.Tick = DefaultDrainTick
		}
		if p.ProbeGrace == 0 {
			p.ProbeGrace = DefaultProbeGrace
		}
		if err := (rollout.Adaptive{Canary: p.Canary, Threshold: p.Threshold, Rate: p.Rate, Retry: time.Second}).Check(circuit.MaxDrainRate); err != nil {
			return fmt.Errorf("drain %w: %w", err, ErrInvalidOption)
		}
		switch {
		case !bounds.Within(p.Tick, 10*time.Millisecond, time.Minute):
			return fmt.Errorf("drain tick must be from 10ms to 1m, got %s: %w", p.Tick, ErrInvalidOption)
		case !bounds.Within(p.ProbeGrace, 0, time.Hour):
			return fmt.Errorf("drain probe grace must be from 0 to 1h, got %s: %w", p.ProbeGrace, ErrInvalidOption)
		}
		if !c.CircuitPolicy.Off {
			cp, err := c.CircuitPolicy.Resolve()
			if err != nil {
				return fmt.Errorf("drains: %w: %w", err, ErrInvalidOption)
			}
			c.CircuitPolicy = cp
		}
		o.drain = &c
		return nil
	}
}

// policy is the drain's rollout policy: a canary below the threshold
// waits the circuit's cool-down.
func (c *DrainConfig) policy() rollout.Adaptive {
	wait := c.CircuitPolicy.CoolDown
	if wait <= 0 {
		wait = circuit.DefaultCoolDown
	}
	return rollout.Adaptive{Canary: c.Policy.Canary, Threshold: c.Policy.Threshold, Rate: c.Policy.Rate, Retry: wait}
}

// DrainStats counts what the drains did.
type DrainStats struct {
	Started, Steps, Prepared, Probes, Halved, CanaryFailed, Done uint64
}

type drainStats struct{ started, steps, prepared, probes, halved, canaryFailed, done atomic.Uint64 }

func (d *drainStats) load() DrainStats {
	return DrainStats{Started: d.started.Load(), Steps: d.steps.Load(), Prepared: d.prepared.Load(), Probes: d.probes.Load(),
		Halved: d.halved.Load(), CanaryFailed: d.canaryFailed.Load(), Done: d.done.Load()}
}
