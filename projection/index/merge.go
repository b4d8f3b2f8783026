package index

import (
	"cmp"
	"slices"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// The answers of indexes that each hold a part of the records (the
// partitions of package partition, one index per instance), merged into
// the answer of one index holding them all. A cursor is a point of the
// order (the sort key, then a hash of the record id), the same on every
// index, so each part is asked with the caller's cursor and the merged
// page's cursor is the point of its last record: one cursor for every
// part.

// MergeList returns the page one index holding every part's records would
// return for q, from the pages each part's index returned for q. A part
// whose answer is missing must not be left out: the page would be short
// (the caller says which parts it could not reach). An invalid sort,
// limit or cursor is an error matching ErrInvalidQuery. Safe for
// concurrent use.
func MergeList(q api.Query, pages []api.Page) (api.Page, error) {
	field, err := fieldOf(q.Sort)
	if err != nil {
		return api.Page{}, err
	}
	limit, hash, _, err := pageOf(q)
	if err != nil {
		return api.Page{}, err
	}
	type placed struct {
		at pos
		it *api.Item
	}
	var all []placed
	more := false
	for i := range pages {
		more = more || pages[i].Next != ""
		for j := range pages[i].Items {
			it := &pages[i].Items[j]
			all = append(all, placed{pos{itemKey(field, it), idTie(it.ID), 0}, it})
		}
	}
	slices.SortFunc(all, func(a, b placed) int {
		c := cmp.Or(cmp.Compare(a.at.key, b.at.key), cmp.Compare(a.at.tie, b.at.tie), cmp.Compare(a.it.ID, b.it.ID))
		if q.Sort.Desc {
			return -c
		}
		return c
	})
	page := api.Page{Items: make([]api.Item, 0, min(len(all), limit))}
	for _, p := range all[:min(len(all), limit)] {
		page.Items = append(page.Items, *p.it)
	}
	if len(all) > limit || more && len(page.Items) > 0 {
		last := all[len(page.Items)-1].at
		page.Next = cursor{query: hash, key: last.key, tie: last.tie}.String()
	}
	return page, nil
}

// itemKey is it's sort key in order f, as sortField.key is an entry's.
func itemKey(f sortField, it *api.Item) int64 {
	switch f {
	case 1:
		return it.NextRetryAt
	case 2:
		return int64(it.Retries)
	default:
		return it.ExecuteAt
	}
}

// MergeSummary returns the summary one index holding every part's records
// would return for a filter, from each part's Summary for it: the counts
// added, each failure group's oldest and newest failure the extremes of
// its parts', and the fingerprint groups merged as MergeFingerprints
// does. Safe for concurrent use.
func MergeSummary(parts []api.Summary) api.Summary {
	sum := api.Summary{Views: map[aggregate.View]int{}}
	groups := map[summaryName]*api.FailureGroup{}
	type sr struct {
		s aggregate.Status
		r aggregate.Recoverability
	}
	statuses := map[sr]int{}
	var fps [][]api.FingerprintGroup
	for i := range parts {
		p := &parts[i]
		sum.Total += p.Total
		sum.Removed += p.Removed
		for v, n := range p.Views {
			sum.Views[v] += n
		}
		for _, s := range p.ByStatus {
			statuses[sr{s.Status, s.Recoverable}] += s.Count
		}
		for _, g := range p.Groups {
			k := summaryName{g.FunctionContext, g.Processor, g.Function, g.ErrorCode}
			m := groups[k]
			if m == nil {
				m = &api.FailureGroup{FunctionContext: g.FunctionContext, Processor: g.Processor, Function: g.Function, ErrorCode: g.ErrorCode}
				groups[k] = m
			}
			m.Total += g.Total
			m.Retryable += g.Retryable
			m.Exhausted += g.Exhausted
			m.Prepared += g.Prepared
			m.Removed += g.Removed
			if g.OldestFailureAt != 0 || g.NewestFailureAt != 0 {
				widen(m, g.OldestFailureAt, g.NewestFailureAt)
			}
		}
		if p.Fingerprints != nil {
			fps = append(fps, p.Fingerprints)
		}
	}
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	for k, n := range statuses {
		sum.ByStatus = append(sum.ByStatus, api.StatusCount{Status: k.s, Recoverable: k.r, Count: n})
	}
	if fps != nil {
		sum.Fingerprints = MergeFingerprints(fps)
	}
	sortSummary(&sum)
	return sum
}

// summaryName names a failure group by its names.
type summaryName struct{ ctx, proc, fn, code string }

// MergeFingerprints returns the fingerprint groups one index holding every
// part's records would return, from each part's FingerprintSummary: the
// counts added, the first and last outcome the extremes of the parts'.
// The sample message is the first part's that has the fingerprint (one
// of its failures' messages, as an index's is). Safe for concurrent use.
func MergeFingerprints(parts [][]api.FingerprintGroup) []api.FingerprintGroup {
	groups := map[string]*api.FingerprintGroup{}
	for _, part := range parts {
		for _, g := range part {
			m := groups[g.Fingerprint]
			if m == nil {
				c := g
				c.ByStatus = make(map[aggregate.Status]int, len(g.ByStatus))
				for s, n := range g.ByStatus {
					c.ByStatus[s] = n
				}
				groups[g.Fingerprint] = &c
				continue
			}
			m.Total += g.Total
			m.Removed += g.Removed
			m.FirstSeen, m.LastSeen = min(m.FirstSeen, g.FirstSeen), max(m.LastSeen, g.LastSeen)
			for s, n := range g.ByStatus {
				m.ByStatus[s] += n
			}
		}
	}
	out := make([]api.FingerprintGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, cmpFingerprints)
	return out
}
