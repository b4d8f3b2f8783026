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

// summaryKey is a FailureGroup's names.
type summaryKey struct{ ctx, proc, fn, code uint32 }

// Summary summarises the records that match f (every record for the zero
// Filter). It reads the index's counts, so its cost grows with the number
// of distinct (function, error code, fingerprint) groups and of cells, not
// with the number of records, at the index's clock's now (see Count) for
// any filter of: at most one of aggregate context, aggregate type and
// function kind; any names of the groups; any status, recoverability and
// view; or, instead of all those, one bound (executeAt, nextRetryAt or
// minRetries). The oldest and newest failure of a group are then found by
// reading its unfinished records in executeAt order from each end until
// one matches (unless the filter selects by executeAt alone): a few reads
// per group for a filter that selects a part of them. With a record, event
// or aggregate id it reads the records that have it; any other filter
// reads every record. An invalid view is an error matching
// ErrInvalidQuery. Safe for concurrent use.
func (ix *Index) Summary(f Filter) (Summary, error) {
	if err := validate(f); err != nil {
		return Summary{}, err
	}
	f, atNow := ix.rlockAt(f)
	defer ix.mu.RUnlock()
	m := ix.compile(f)
	if m.byLookup() {
		return ix.summarize(&m, func(yield func(*entry)) {
			ix.lookup(&m, func(_ uint32, e *entry) { yield(e) })
		}), nil
	}
	if sum, ok := ix.summaryFast(&m, atNow); ok {
		return sum, nil
	}
	return ix.summarize(&m, func(yield func(*entry)) {
		ix.slots.each(func(_ uint32, e *entry) bool {
			if m.match(e) {
				yield(e)
			}
			return true
		})
	}), nil
}

// summarize summarises the entries each yields, which match m. The caller
// holds the read lock.
func (ix *Index) summarize(m *matcher, each func(yield func(*entry))) Summary {
	groups := map[summaryKey]*FailureGroup{}
	type sr struct{ s, r uint8 }
	statuses := map[sr]int{}
	sum := Summary{Views: map[aggregate.View]int{}}
	each(func(e *entry) {
		sum.Total++
		statuses[sr{e.status, e.recover}]++
		s := e.predicateState()
		for _, v := range aggregate.Views {
			if v.Contains(&s, m.now) {
				sum.Views[v]++
			}
		}
		k := summaryKey{e.fnContext, e.fnProcessor, e.fnName, e.errorCode}
		g := groups[k]
		if g == nil {
			g = &FailureGroup{FunctionContext: ix.names.name(k.ctx), Processor: ix.names.name(k.proc),
				Function: ix.names.name(k.fn), ErrorCode: ix.names.name(k.code)}
			groups[k] = g
		}
		addTo(g, &s)
	})
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	for k, n := range statuses {
		sum.ByStatus = append(sum.ByStatus, StatusCount{Status: enumValue(aggregate.Statuses, k.s), Recoverable: enumValue(aggregate.Recoverabilities, k.r), Count: n})
	}
	sortSummary(&sum)
	return sum
}

// sortSummary puts the groups and status counts in their order: the
// largest group first, statuses by name.
func sortSummary(sum *Summary) {
	// Each comparison is made only when the ones before tie (cmp.Or's
	// arguments would all be computed).
	slices.SortFunc(sum.Groups, func(a, b FailureGroup) int {
		switch {
		case a.Total != b.Total:
			return cmp.Compare(b.Total, a.Total)
		case a.FunctionContext != b.FunctionContext:
			return cmp.Compare(a.FunctionContext, b.FunctionContext)
		case a.Processor != b.Processor:
			return cmp.Compare(a.Processor, b.Processor)
		case a.Function != b.Function:
			return cmp.Compare(a.Function, b.Function)
		}
		return cmp.Compare(a.ErrorCode, b.ErrorCode)
	})
	slices.SortFunc(sum.ByStatus, func(a, b StatusCount) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Recoverable, b.Recoverable))
	})
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
