package scheduler

import (
	"fmt"
	"time"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rules"
)

// RuleSource gives the operators' current rules. *rules.Watcher
// satisfies it; StaticRules wraps a fixed set.
type RuleSource interface {
	Set() *rules.Set
}

var _ RuleSource = (*rules.Watcher)(nil)

// StaticRules is a RuleSource of a fixed set.
type StaticRules struct{ Rules *rules.Set }

// Set returns the fixed set.
func (s StaticRules) Set() *rules.Set { return s.Rules }

// WithHolds makes the scheduler leave alone the due records that a
// HOLD_UNTIL_DEPLOY rule of src matches (rules.Set.Held): they stay due
// but are prepared only by a deploy release (WithDeployRelease) or an
// operator. A pass reads further down the due list past the held records,
// so they never keep the others from being prepared; its cost grows with
// the number of held records that are due (in memory, no I/O).
func WithHolds(src RuleSource) Option {
	return func(o *options) error {
		if src == nil {
			return fmt.Errorf("rule source is nil: %w", ErrInvalidOption)
		}
		o.holds = src
		return nil
	}
}

// failureOf is the rules' view of a due record.
func failureOf(d projection.Due) rules.Failure {
	return rules.Failure{Function: d.Function, ErrorCode: d.ErrorCode, Fingerprint: d.Fingerprint}
}

// listDue lists the due records a pass considers, without the held ones
// (by a rule, or by their circuit: see skipper): at least batch plus the
// backing-off records that are not held, unless the due list ends first
// (complete). It starts from the number held in the last pass and doubles
// the list until it has enough.
func (s *Scheduler) listDue(now time.Time) (due []projection.Due, complete bool) {
	want := s.opts.batch + s.backoff.extra()
	skip := s.skipper(now)
	if skip == nil {
		listed := s.due.Due(now, want)
		return listed, len(listed) < want
	}
	limit := want + int(s.heldLast.Load())
	for {
		listed := s.due.Due(now, limit)
		complete = len(listed) < limit
		due = due[:0]
		held := 0
		for _, d := range listed {
			if skip(d) {
				held++
				continue
			}
			due = append(due, d)
		}
		if complete || len(due) >= want {
			s.heldLast.Store(int64(held))
			return due, complete
		}
		limit *= 2
	}
}

// skipper returns what a pass leaves alone, nil if nothing: the records a
// HOLD_UNTIL_DEPLOY rule holds (WithHolds), and those of a function whose
// circuit is not closed or whose recovery drain waits or drains
// (WithDrains): the drain prepares them, not the passes.
func (s *Scheduler) skipper(now time.Time) func(projection.Due) bool {
	var set *rules.Set
	if s.opts.holds != nil {
		set = s.opts.holds.Set()
	}
	drains := s.opts.drain != nil
	if set == nil && !drains {
		return nil
	}
	return func(d projection.Due) bool {
		return (set != nil && set.Held(failureOf(d), now)) || (drains && s.drainHolds(circuit.Of(d.Function)))
	}
}
