package rules

import (
	"cmp"
	"slices"
	"time"

	"github.com/amends-dev/amends/api"
)

type functionKey struct{ ctx, proc, fn, code string }

// Set is an immutable index of rules. The zero Set and a nil *Set match
// nothing. Safe for concurrent use.
type Set struct {
	rules         []*api.Rule // every rule given, newest first
	byFingerprint map[string][]*api.Rule
	byFunction    map[functionKey][]*api.Rule
}

// NewSet indexes rules (removed ones are left out; expired ones are kept
// and skipped when matching, as expiry depends on now).
func NewSet(rules []api.Rule) *Set {
	s := &Set{byFingerprint: map[string][]*api.Rule{}, byFunction: map[functionKey][]*api.Rule{}}
	for i := range rules {
		r := rules[i]
		if r.RemovedAt != 0 {
			continue
		}
		s.rules = append(s.rules, &r)
	}
	slices.SortStableFunc(s.rules, func(a, b *api.Rule) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	for _, r := range s.rules {
		m := r.Match
		if m.Fingerprint != "" {
			s.byFingerprint[m.Fingerprint] = append(s.byFingerprint[m.Fingerprint], r)
			continue
		}
		k := functionKey{m.FunctionContext, m.Processor, m.Function, m.ErrorCode}
		s.byFunction[k] = append(s.byFunction[k], r)
	}
	return s
}

// Len is the number of rules in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Match returns the rule that acts on failure x at now: the newest live
// fingerprint rule for x's fingerprint, else the newest live rule for its
// function and error code. The rule is shared: do not modify it. Its cost
// is two map look-ups, whatever the number of rules.
func (s *Set) Match(x Failure, now time.Time) (*api.Rule, bool) {
	if s == nil || len(s.rules) == 0 {
		return nil, false
	}
	if x.Fingerprint != "" {
		if r := first(s.byFingerprint[x.Fingerprint], now); r != nil {
			return r, true
		}
	}
	k := functionKey{x.Function.ContextName, x.Function.ProcessorName, x.Function.Name, x.ErrorCode}
	if r := first(s.byFunction[k], now); r != nil {
		return r, true
	}
	return nil, false
}

// Parked reports whether failure x is parked until a deploy at now: the
// rule that acts on it is a park-until-deploy (HOLD_UNTIL_DEPLOY) rule.
func (s *Set) Parked(x Failure, now time.Time) bool {
	r, ok := s.Match(x, now)
	return ok && r.Action == ParkUntilDeploy
}

// Parks lists the live park-until-deploy rules of processor (context,
// name) at now, newest first; a fingerprint rule is listed for every
// processor, as a fingerprint does not say its processor.
func (s *Set) Parks(context, processor string, now time.Time) []*api.Rule {
	if s == nil {
		return nil
	}
	var out []*api.Rule
	for _, r := range s.rules {
		if r.Action != ParkUntilDeploy || !Live(r, now) {
			continue
		}
		if r.Match.Fingerprint != "" || r.Match.FunctionContext == context && r.Match.Processor == processor {
			out = append(out, r)
		}
	}
	return out
}

// Rules returns the rules of s, newest first (shared: do not modify them).
func (s *Set) Rules() []*api.Rule {
	if s == nil {
		return nil
	}
	return s.rules
}

func first(rs []*api.Rule, now time.Time) *api.Rule {
	for _, r := range rs {
		if Live(r, now) {
			return r
		}
	}
	return nil
}
