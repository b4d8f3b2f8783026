package projection

import (
	"cmp"
	"slices"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// Summary is the failure overview of the records a filter selects (the
// API's type).
type Summary = api.Summary

// FailureGroup is the records of one (function context, processor,
// function, error code).
type FailureGroup = api.FailureGroup

// StatusCount is the number of records of one status and recoverability.
type StatusCount = api.StatusCount

type groupKey struct{ ctx, proc, fn, code uint32 }

// Summary summarises the records that match f (every record for the zero
// Filter). It reads every entry. An invalid view is an error matching
// ErrInvalidQuery. Safe for concurrent use.
func (ix *Index) Summary(f Filter) (Summary, error) {
	if err := validate(f); err != nil {
		return Summary{}, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m := ix.compile(f)
	groups := map[groupKey]*FailureGroup{}
	type sr struct{ s, r uint8 }
	statuses := map[sr]int{}
	sum := Summary{Views: map[aggregate.View]int{}}
	ix.slots.each(func(_ uint32, e *entry) bool {
		if !m.match(e) {
			return true
		}
		sum.Total++
		statuses[sr{e.status, e.recover}]++
		s := e.predicateState()
		for _, v := range aggregate.Views {
			if v.Contains(&s, m.now) {
				sum.Views[v]++
			}
		}
		k := groupKey{e.fnContext, e.fnProcessor, e.fnName, e.errorCode}
		g := groups[k]
		if g == nil {
			g = &FailureGroup{FunctionContext: ix.names.name(k.ctx), Processor: ix.names.name(k.proc),
				Function: ix.names.name(k.fn), ErrorCode: ix.names.name(k.code)}
			groups[k] = g
		}
		addTo(g, &s)
		return true
	})
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	slices.SortFunc(sum.Groups, func(a, b FailureGroup) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.FunctionContext, b.FunctionContext),
			cmp.Compare(a.Processor, b.Processor), cmp.Compare(a.Function, b.Function), cmp.Compare(a.ErrorCode, b.ErrorCode))
	})
	for k, n := range statuses {
		sum.ByStatus = append(sum.ByStatus, StatusCount{Status: enumValue(aggregate.Statuses, k.s), Recoverable: enumValue(aggregate.Recoverabilities, k.r), Count: n})
	}
	slices.SortFunc(sum.ByStatus, func(a, b StatusCount) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Recoverable, b.Recoverable))
	})
	return sum, nil
}

// addTo counts record s in g.
func addTo(g *FailureGroup, s *aggregate.State) {
	g.Total++
	if s.IsRetryable() {
		g.Retryable++
	}
	if s.Status == aggregate.StatusSucceeded {
		return
	}
	if !s.IsBelowRetryThreshold() {
		g.Exhausted++
	}
	if s.Status == aggregate.StatusPrepared {
		g.Prepared++
	}
	if g.OldestFailureAt == 0 || s.ExecuteAt < g.OldestFailureAt {
		g.OldestFailureAt = s.ExecuteAt
	}
	g.NewestFailureAt = max(g.NewestFailureAt, s.ExecuteAt)
}
