package projection

import (
	"slices"

	"github.com/amends-dev/amends/aggregate"
)

// How a query finds its records, cheapest first:
//
//   - a record id, event id or aggregate id: the few records that have it
//     (byID, counts.byEvent, counts.byAggregate), each checked with the
//     filter;
//   - otherwise the counts (cells.go), when the filter is one they answer:
//     for Count any of function context, processor, function, error code,
//     fingerprint, status, recoverability and view, or one of those
//     without a time-dependent view plus one bound (executeAt,
//     nextRetryAt or minRetries), or one of aggregate context, aggregate
//     type and function kind with status, recoverability and a view that
//     does not depend on time; for Summary the first of those;
//   - otherwise every record.

// rangeDims returns how many of the filter's bounds are set: executeAt,
// nextRetryAt, minRetries.
func (m *matcher) rangeDims() int {
	n := 0
	if m.execBound {
		n++
	}
	if m.nextBound {
		n++
	}
	if m.f.MinRetries != 0 {
		n++
	}
	return n
}

// byLookup reports whether the filter names a record, event or aggregate
// id, so that the lookups find its candidates.
func (m *matcher) byLookup() bool {
	return m.f.ID != "" || m.f.EventID != "" || m.f.AggregateID != ""
}

// lookup calls f for every record that matches m, found through the
// filter's record, event or aggregate id (byLookup must hold). The caller
// holds the read lock.
func (ix *Index) lookup(m *matcher, f func(slot uint32, e *entry)) {
	visit := func(slot uint32) {
		if e := ix.slots.at(slot); m.match(e) {
			f(slot, e)
		}
	}
	switch {
	case m.f.ID != "":
		if slot, ok := ix.byID[m.f.ID]; ok {
			visit(slot)
		}
	case m.f.EventID != "":
		ix.candidates(m.f.EventID, false, visit)
	default:
		ix.candidates(m.f.AggregateID, true, visit)
	}
}

// groupMatches reports whether g's names pass the filter.
func (m *matcher) groupMatches(g *group) bool {
	k := [5]uint32{g.key.ctx, g.key.proc, g.key.fn, g.key.code, g.key.fp}
	for i, want := range m.names[2:] {
		if want != 0 && k[i] != want {
			return false
		}
	}
	return true
}

// cellMatches reports whether the records of cell kind k pass the
// filter's status and recoverability, and, if vi >= 0 names a view that
// does not depend on time, the view.
func (m *matcher) cellMatches(k *cellKind, vi int) bool {
	if m.stat != 0 && k.status != m.stat || m.rec != 0 && k.recover != m.rec {
		return false
	}
	return vi < 0 || timeDependent[vi] || k.in[vi][0]
}

// countFast answers Count from the counts; ok is false when they cannot.
// The caller holds the read lock.
func (ix *Index) countFast(m *matcher) (n int, ok bool) {
	if m.none {
		return 0, true
	}
	vi := viewIndex(m.f.View)
	dims := m.rangeDims()
	extras := 0
	for _, set := range []bool{m.names[0] != 0, m.names[1] != 0, m.kind != 0} {
		if set {
			extras++
		}
	}
	if extras > 0 {
		if extras > 1 || dims > 0 || vi >= 0 && timeDependent[vi] || slices.ContainsFunc(m.names[2:], func(id uint32) bool { return id != 0 }) {
			return 0, false
		}
		var nc *nameCounts
		switch {
		case m.names[0] != 0:
			nc = ix.counts.aggCtx[m.names[0]]
		case m.names[1] != 0:
			nc = ix.counts.aggType[m.names[1]]
		default:
			nc = &ix.counts.kind[m.kind]
		}
		if nc == nil {
			return 0, true
		}
		for ci := range numCells {
			if m.cellMatches(&kinds[ci], vi) {
				n += nc[ci]
			}
		}
		return n, true
	}
	if dims > 1 || dims == 1 && vi >= 0 && timeDependent[vi] {
		return 0, false
	}
	now := m.now.UnixMilli()
	for _, g := range ix.counts.list {
		if !m.groupMatches(g) {
			continue
		}
		for ci, c := range g.cells {
			k := &kinds[ci]
			if c == nil || c.n == 0 || !m.cellMatches(k, vi) {
				continue
			}
			switch {
			case dims == 1:
				n += c.inRange(m)
			case vi >= 0:
				n += c.inView(k, vi, now)
			default:
				n += c.n
			}
		}
	}
	return n, true
}

// inRange returns how many of the cell's records pass the filter's one
// bound.
func (c *cell) inRange(m *matcher) int {
	switch {
	case m.f.MinRetries != 0:
		return c.minRetries(m.f.MinRetries)
	case m.execBound:
		return between(&c.executeAt, m.from, m.to, !m.f.ExecuteAtTo.IsZero())
	default:
		return between(&c.nextRetry, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero())
	}
}

// between returns the number of values x of s with inBounds(x, from, to,
// hasTo).
func between(s *sorted[int64], from, to int64, hasTo bool) int {
	n := s.n
	if hasTo {
		n = s.less(to)
	}
	return max(0, n-s.less(from))
}

// summaryFast reports whether Summary can read the counts for m.
func (m *matcher) summaryFast() bool {
	vi := viewIndex(m.f.View)
	return m.names[0] == 0 && m.names[1] == 0 && m.kind == 0 && m.rangeDims() == 0 && (vi < 0 || !timeDependent[vi])
}

// summarizeCounts is Summary from the counts (summaryFast must hold). The
// caller holds the read lock.
func (ix *Index) summarizeCounts(m *matcher) Summary {
	sum := Summary{Views: map[aggregate.View]int{}}
	if m.none {
		return sum
	}
	vi := viewIndex(m.f.View)
	now := m.now.UnixMilli()
	groups := map[summaryKey]*FailureGroup{}
	var statuses [numCells]int
	for _, g := range ix.counts.list {
		if !m.groupMatches(g) {
			continue
		}
		var fg *FailureGroup
		for ci, c := range g.cells {
			k := &kinds[ci]
			if c == nil || c.n == 0 || !m.cellMatches(k, vi) {
				continue
			}
			sum.Total += c.n
			statuses[cellIndex(k.status, k.recover, false)] += c.n
			var combos *[4]int
			for vj, v := range aggregate.Views {
				in := k.in[vj]
				if in == [4]bool{} {
					continue
				}
				if in == [4]bool{true, true, true, true} {
					sum.Views[v] += c.n
					continue
				}
				if combos == nil {
					cs := c.combos(k, now)
					combos = &cs
				}
				x := 0
				for i, cnt := range combos {
					if in[i] {
						x += cnt
					}
				}
				if x > 0 {
					sum.Views[v] += x
				}
			}
			if fg == nil {
				sk := summaryKey{g.key.ctx, g.key.proc, g.key.fn, g.key.code}
				if fg = groups[sk]; fg == nil {
					fg = &FailureGroup{FunctionContext: ix.names.name(sk.ctx), Processor: ix.names.name(sk.proc),
						Function: ix.names.name(sk.fn), ErrorCode: ix.names.name(sk.code)}
					groups[sk] = fg
				}
			}
			fg.Total += c.n
			if k.retryable {
				fg.Retryable += c.n
			}
			if k.finished {
				continue
			}
			if k.exhausted {
				fg.Exhausted += c.n
			}
			if k.prepared {
				fg.Prepared += c.n
			}
			if oldest := c.executeAt.first(); fg.OldestFailureAt == 0 || oldest < fg.OldestFailureAt {
				fg.OldestFailureAt = oldest
			}
			fg.NewestFailureAt = max(fg.NewestFailureAt, c.executeAt.last())
		}
	}
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	for ci, n := range statuses {
		if n > 0 {
			k := &kinds[ci]
			sum.ByStatus = append(sum.ByStatus, StatusCount{Status: enumValue(aggregate.Statuses, k.status),
				Recoverable: enumValue(aggregate.Recoverabilities, k.recover), Count: n})
		}
	}
	sortSummary(&sum)
	return sum
}
