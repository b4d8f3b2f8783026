package scheduler

import (
	"fmt"
	"time"

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
// operator. The due list a pass reads grows by the number of records held
// in the previous pass, so held records never keep the others from being
// prepared for more than one pass.
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

// unheld drops the held records from due and remembers how many there
// were for the next pass's limit.
func (s *Scheduler) unheld(due []projection.Due, now time.Time) []projection.Due {
	if s.opts.holds == nil {
		return due
	}
	set := s.opts.holds.Set()
	out := due[:0:0]
	held := 0
	for _, d := range due {
		if set.Held(failureOf(d), now) {
			held++
			continue
		}
		out = append(out, d)
	}
	s.heldLast.Store(int64(held))
	return out
}
