package projection

import (
	"cmp"
	"slices"

	"github.com/amends-dev/amends/aggregate"
)

// Summary is the failure overview of the records a filter selects.
type Summary struct {
	// Total is the number of records.
	Total int `json:"total"`
	// Groups count the records per failing function and error code, the
	// largest group first.
	Groups []FailureGroup `json:"groups"`
	// ByStatus counts the records per status and recoverability.
	ByStatus []StatusCount `json:"byStatus"`
	// Views counts the records in each operator view at the filter's now.
	Views map[aggregate.View]int `json:"views"`
}

// FailureGroup is the records of one (function context, processor,
// function, error code).
type FailureGroup struct {
	FunctionContext string `json:"functionContext"`
	Processor       string `json:"processor"`
	Function        string `json:"function"`
	ErrorCode       string `json:"errorCode"`
	// Total counts every record of the group.
	Total int `json:"total"`
	// Retryable counts records neither succeeded nor out of retries
	// (State.IsRetryable).
	Retryable int `json:"retryable"`
	// Exhausted counts records not succeeded and out of retries (not
	// State.IsBelowRetryThreshold): only an operator moves them on.
	Exhausted int `json:"exhausted"`
	// Prepared counts records with a replay under way.
	Prepared int `json:"prepared"`
	// OldestFailureAt and NewestFailureAt are the smallest and largest
	// executeAt (epoch ms) of the group's unfinished records: when the
	// still-open failures happened. Zero if every record succeeded.
	OldestFailureAt int64 `json:"oldestFailureAt,omitempty"`
	NewestFailureAt int64 `json:"newestFailureAt,omitempty"`
}

// StatusCount is the number of records of one status and recoverability.
type StatusCount struct {
	Status      aggregate.Status         `json:"status"`
	Recoverable aggregate.Recoverability `json:"recoverable"`
	Count       int                      `json:"count"`
}

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
		g.add(&s)
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
		sum.ByStatus = append(sum.ByStatus, StatusCount{enumValue(aggregate.Statuses, k.s), enumValue(aggregate.Recoverabilities, k.r), n})
	}
	slices.SortFunc(sum.ByStatus, func(a, b StatusCount) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Recoverable, b.Recoverable))
	})
	return sum, nil
}

// add counts record s in g.
func (g *FailureGroup) add(s *aggregate.State) {
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
