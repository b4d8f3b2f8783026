package scheduler

import (
	"fmt"
	"time"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/projection/index"
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

// WithParkRules makes the scheduler park the due records that a
// park-until-deploy rule (HOLD_UNTIL_DEPLOY) of src matches
// (rules.Set.Parked): they stay due but are prepared only by a park
// release (WithParkRelease) or an operator. A pass reads further down the
// due list past the parked records,
// so they never keep the others from being prepared; its cost grows with
// the number of parked records that are due (in memory, no I/O).
func WithParkRules(src RuleSource) Option {
	return func(o *options) error {
		if src == nil {
			return fmt.Errorf("rule source is nil: %w", ErrInvalidOption)
		}
		o.parkRules = src
		return nil
	}
}

// failureOf is the rules' view of a due record.
func failureOf(d index.Due) rules.Failure {
	return rules.Failure{Function: d.Function, ErrorCode: d.ErrorCode, Fingerprint: d.Fingerprint}
}

// listDue lists the due records a pass considers, without those it leaves
// alone (parked by a rule, or held by their circuit's drain: see skipper): at least batch plus the
// backing-off records not left alone, unless the due list ends first
// (complete). It starts from the number left alone in the last pass and doubles
// the list until it has enough.
func (s *Scheduler) listDue(now time.Time) (due []index.Due, complete bool) {
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
				if s.mine(d) { // another instance's record is not held: it is not this one's to prepare
					held++
				}
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

// skipper returns what a pass leaves alone, nil if nothing: the records of
// the partitions other instances hold (WithPartitions), the records a
// park-until-deploy rule parks (WithParkRules), and those of a function whose
// circuit is not closed or whose recovery drain waits or drains
// (WithDrains): the drain prepares them, not the passes.
func (s *Scheduler) skipper(now time.Time) func(index.Due) bool {
	var set *rules.Set
	if s.opts.parkRules != nil {
		set = s.opts.parkRules.Set()
	}
	drains := s.opts.drain != nil
	if set == nil && !drains && s.opts.partitions == nil {
		return nil
	}
	return func(d index.Due) bool {
		return !s.mine(d) || (set != nil && set.Parked(failureOf(d), now)) || (drains && s.drainHolds(circuit.Of(d.Function)))
	}
}
