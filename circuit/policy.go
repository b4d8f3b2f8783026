package circuit

import (
	"cmp"
	"fmt"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
)

// Policy says when a function's circuit opens and how it closes again.
// The zero Policy is DefaultPolicy: each zero field takes its default.
//
// What counts are distinct events, not calls (see the package
// documentation, "Evidence"): an event's immediate retries, its replays
// while it is in the window, and the replays of records that already
// failed for a real reason are no new evidence about the dependency.
//
// Closed → open: when, of the distinct events of the function's calls on
// one instance, the last ConsecutiveFailures failed, or at least MinCalls
// were called in the last Window and the share that failed is, with
// confidence, above FailureRatio (the lower end of its Wilson interval at
// z = 4). Only failures the function's classification calls RECOVERABLE
// or UNKNOWN count: an UNRECOVERABLE one is about the event, not the
// dependency. One aggregate adds at most a quarter of
// ConsecutiveFailures (at least 2) failures to the counts of a window.
//
// Open → half-open: after the cool-down (CoolDown, doubled after each
// reopening up to MaxCoolDown) one call at a time is let through as the
// probe; the other calls are still refused. A probe claimed by an
// instance that dies is given to another after ProbeTimeout.
//
// Half-open → closed after probes of Successes distinct events succeeded;
// → open again, with a longer cool-down, once ProbeFailures probes failed
// for each success plus one: a live probe may be a bad event.
type Policy struct {
	// Off turns the circuit off: the function is always called.
	Off bool
	// ConsecutiveFailures opens the circuit after that many distinct
	// events failed in a row (default 20).
	ConsecutiveFailures int
	// FailureRatio and MinCalls open it when at least MinCalls distinct
	// events were called in Window and the share that failed is above
	// FailureRatio with confidence (defaults 0.5, 20 and 30 s): 19 of 20
	// fail, 69 of 100, 566 of 1 000. Events that fail for their own
	// reason at a share up to FailureRatio never open it.
	FailureRatio float64
	MinCalls     int
	Window       time.Duration
	// CoolDown is how long the circuit stays open before a probe (default
	// 10 s); it doubles after every failed probe up to MaxCoolDown
	// (default 30 s) and starts again at CoolDown once the circuit
	// closes.
	CoolDown    time.Duration
	MaxCoolDown time.Duration
	// Successes is how many probes of distinct events must succeed to
	// close it (default 3).
	Successes int
	// ProbeFailures is how many probes must fail, per success plus one,
	// to open it again (default 5: five failed probes and no success, ten
	// and one, ...).
	ProbeFailures int
	// ProbeTimeout is how long a probe may run before another instance may
	// probe instead (default 30 s).
	ProbeTimeout time.Duration
	// Jitter is the largest fraction cut at random from each cool-down
	// (default 0.2; negative: none), so that the probes of a dependency
	// that goes up and down on a period do not fall into its down phases
	// every time, nor the circuits of many functions probe at once.
	Jitter float64
}

// The defaults of a Policy: conservative, so that a circuit opens on an
// outage, not on a few failures among many successes.
const (
	DefaultConsecutiveFailures = 20
	DefaultFailureRatio        = 0.5
	DefaultMinCalls            = 20
	DefaultWindow              = 30 * time.Second
	DefaultCoolDown            = 10 * time.Second
	// A dead dependency gets a probe at least every DefaultMaxCoolDown:
	// two calls a minute cost it nothing, and its recovery is noticed
	// within 30 s, so the drain of an outage's records starts at most that
	// long after its end.
	DefaultMaxCoolDown = 30 * time.Second
	DefaultSuccesses   = 3
	// A half-open circuit of a function whose events fail for their own
	// reason at the rate r opens again wrongly with probability r^5 before
	// its first success: 3 % at r = 50 %, 0.2 % at 30 %; a dead
	// dependency costs five calls per cool-down.
	DefaultProbeFailures = 5
	DefaultProbeTimeout  = 30 * time.Second
	DefaultJitter        = 0.2
)

// DefaultPolicy is the policy of every function that sets none.
var DefaultPolicy = Policy{
	ConsecutiveFailures: DefaultConsecutiveFailures, FailureRatio: DefaultFailureRatio, MinCalls: DefaultMinCalls,
	Window: DefaultWindow, CoolDown: DefaultCoolDown, MaxCoolDown: DefaultMaxCoolDown, Successes: DefaultSuccesses,
	ProbeFailures: DefaultProbeFailures, ProbeTimeout: DefaultProbeTimeout, Jitter: DefaultJitter,
}

// Resolve returns p with its zero fields set to their defaults, or an
// error matching ErrInvalidOption that names the field out of range.
func (p Policy) Resolve() (Policy, error) {
	p = p.withDefaults()
	return p, p.check()
}

// withDefaults fills p's zero fields from DefaultPolicy; a negative
// Jitter becomes -1 (none).
func (p Policy) withDefaults() Policy {
	d := DefaultPolicy
	p.ConsecutiveFailures = cmp.Or(p.ConsecutiveFailures, d.ConsecutiveFailures)
	p.FailureRatio = cmp.Or(p.FailureRatio, d.FailureRatio)
	p.MinCalls = cmp.Or(p.MinCalls, d.MinCalls)
	p.Window = cmp.Or(p.Window, d.Window)
	p.CoolDown = cmp.Or(p.CoolDown, d.CoolDown)
	p.MaxCoolDown = cmp.Or(p.MaxCoolDown, max(d.MaxCoolDown, p.CoolDown))
	p.Successes = cmp.Or(p.Successes, d.Successes)
	p.ProbeFailures = cmp.Or(p.ProbeFailures, d.ProbeFailures)
	p.ProbeTimeout = cmp.Or(p.ProbeTimeout, d.ProbeTimeout)
	switch {
	case p.Jitter == 0:
		p.Jitter = d.Jitter
	case p.Jitter < 0:
		p.Jitter = -1
	}
	return p
}

// check reports the first field of a resolved policy out of its bounds.
func (p Policy) check() error {
	switch {
	case !bounds.Within(p.ConsecutiveFailures, 1, 100000):
		return invalid("consecutiveFailures must be from 1 to 100000, got %d", p.ConsecutiveFailures)
	case !(p.FailureRatio > 0) || p.FailureRatio > 1:
		return invalid("failureRatio must be above 0 and at most 1, got %v", p.FailureRatio)
	case !bounds.Within(p.MinCalls, 1, 1000000):
		return invalid("minCalls must be from 1 to 1000000, got %d", p.MinCalls)
	case !bounds.Within(p.Window, time.Second, time.Hour):
		return invalid("window must be from 1s to 1h, got %s", p.Window)
	case !bounds.Within(p.CoolDown, 100*time.Millisecond, time.Hour):
		return invalid("coolDown must be from 100ms to 1h, got %s", p.CoolDown)
	case !bounds.Within(p.MaxCoolDown, p.CoolDown, 24*time.Hour):
		return invalid("maxCoolDown must be from coolDown (%s) to 24h, got %s", p.CoolDown, p.MaxCoolDown)
	case !bounds.Within(p.Successes, 1, 100):
		return invalid("successes must be from 1 to 100, got %d", p.Successes)
	case !bounds.Within(p.ProbeFailures, 1, 100):
		return invalid("probeFailures must be from 1 to 100, got %d", p.ProbeFailures)
	case !bounds.Within(p.ProbeTimeout, 100*time.Millisecond, time.Hour):
		return invalid("probeTimeout must be from 100ms to 1h, got %s", p.ProbeTimeout)
	case p.Jitter > 0.9:
		return invalid("jitter must be at most 0.9 (negative: none), got %v", p.Jitter)
	}
	return nil
}

// wait is a cool-down of ms cut by the policy's jitter times r, a random
// draw in [0, 1).
func (p Policy) wait(ms int64, r float64) int64 {
	if p.Jitter <= 0 || r <= 0 || r >= 1 {
		return ms
	}
	return ms - int64(float64(ms)*p.Jitter*r)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("circuit policy: %s: %w", fmt.Sprintf(format, args...), ErrInvalidOption)
}
