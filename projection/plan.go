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
//   - otherwise the counts (cells.go), when the filter is one they
//     answer, at a cost that grows with the number of groups, not of
//     records: see Count and Summary;
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
		if slot, ok := ix.slotOf(m.f.ID); ok {
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

// namesGroup reports whether the filter names any of a group's names.
func (m *matcher) namesGroup() bool {
	return slices.ContainsFunc(m.names[2:], func(id uint32) bool { return id != 0 })
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
	timedView := vi >= 0 && timeDependent[vi]
	restricted := m.stat != 0 || m.rec != 0 || vi >= 0 && !timedView
	if dims > 1 || dims == 1 && (timedView || restricted && m.nextBound) {
		return 0, false
	}
	now := m.now.UnixMilli()
	if !restricted && timedView && dims == 0 && !m.namesGroup() {
		return ix.counts.views.at(slices.Index(timedViews, vi), now), true
	}
	for _, g := range ix.counts.list {
		if !m.groupMatches(g) {
			continue
		}
		switch {
		case dims == 0 && !timedView:
			for ci, c := range g.n {
				if c > 0 && m.cellMatches(&kinds[ci], vi) {
					n += int(c)
				}
			}
		case !restricted && timedView:
			n += g.views.at(slices.Index(timedViews, vi), now)
		case !restricted:
			n += g.inRange(m)
		default:
			for ci, c := range g.cells {
				k := &kinds[ci]
				if c == nil || c.n == 0 || !m.cellMatches(k, vi) {
					continue
				}
				if timedView {
					n += c.inView(k, vi, now)
				} else {
					n += c.inRange(m)
				}
			}
		}
	}
	return n, true
}

// inRange returns how many of the group's records pass the filter's one
// bound.
func (g *group) inRange(m *matcher) int {
	switch {
	case m.f.MinRetries != 0:
		return g.retries.atLeast(m.f.MinRetries)
	case m.execBound:
		hasTo := !m.f.ExecuteAtTo.IsZero()
		return between(&g.open, m.from, m.to, hasTo) + between(&g.done, m.from, m.to, hasTo)
	default:
		return between(&g.nextRetry, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero())
	}
}

// inRange returns how many of the cell's records pass the filter's one
// bound, minRetries or executeAt.
func (c *cell) inRange(m *matcher) int {
	if m.f.MinRetries != 0 {
		return c.retries.atLeast(m.f.MinRetries)
	}
	return between(&c.executeAt, m.from, m.to, !m.f.ExecuteAtTo.IsZero())
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

// summarizeCounts is Summary from the counts (summaryFast must hold):
// from the groups' own counts unless the filter selects by status,
// recoverability or view, from their cells' then. The caller holds the
// read lock.
func (ix *Index) summarizeCounts(m *matcher) Summary {
	sum := Summary{Views: map[aggregate.View]int{}}
	if m.none {
		return sum
	}
	vi := viewIndex(m.f.View)
	restricted := m.stat != 0 || m.rec != 0 || vi >= 0
	global := !restricted && !m.namesGroup() // the timed views of every record
	now := m.now.UnixMilli()
	groups := map[summaryKey]*FailureGroup{}
	var statuses [numCells]int
	var views [8]int
	for _, g := range ix.counts.list {
		if !m.groupMatches(g) {
			continue
		}
		var part FailureGroup
		for ci, c := range g.n {
			k := &kinds[ci]
			if c == 0 || !m.cellMatches(k, vi) {
				continue
			}
			n := int(c)
			part.Total += n
			statuses[cellIndex(k.status, k.recover, false)] += n
			for vj := range aggregate.Views {
				if !timeDependent[vj] && k.in[vj][0] {
					views[vj] += n
				}
			}
			if k.retryable {
				part.Retryable += n
			}
			if k.exhausted {
				part.Exhausted += n
			}
			if k.prepared {
				part.Prepared += n
			}
			if !restricted {
				continue
			}
			cl := g.cells[ci]
			for _, vj := range timedViews {
				views[vj] += cl.inView(k, vj, now)
			}
			if !k.finished {
				widen(&part, cl.executeAt.first(), cl.executeAt.last())
			}
		}
		if part.Total == 0 {
			continue
		}
		if !restricted {
			for i, vj := range timedViews {
				if !global {
					views[vj] += g.views.at(i, now)
				}
			}
			if g.open.n > 0 {
				widen(&part, g.open.first(), g.open.last())
			}
		}
		sum.Total += part.Total
		sk := summaryKey{g.key.ctx, g.key.proc, g.key.fn, g.key.code}
		fg := groups[sk]
		if fg == nil {
			fg = &FailureGroup{FunctionContext: ix.names.name(sk.ctx), Processor: ix.names.name(sk.proc),
				Function: ix.names.name(sk.fn), ErrorCode: ix.names.name(sk.code)}
			groups[sk] = fg
		}
		fg.Total += part.Total
		fg.Retryable += part.Retryable
		fg.Exhausted += part.Exhausted
		fg.Prepared += part.Prepared
		if part.NewestFailureAt != 0 || part.OldestFailureAt != 0 {
			widen(fg, part.OldestFailureAt, part.NewestFailureAt)
		}
	}
	if global {
		for i, vj := range timedViews {
			views[vj] = ix.counts.views.at(i, now)
		}
	}
	for vj, n := range views[:len(aggregate.Views)] {
		if n > 0 {
			sum.Views[aggregate.Views[vj]] = n
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

// widen extends g's failure times to oldest and newest as addTo does.
func widen(g *FailureGroup, oldest, newest int64) {
	if g.OldestFailureAt == 0 || oldest < g.OldestFailureAt {
		g.OldestFailureAt = oldest
	}
	g.NewestFailureAt = max(g.NewestFailureAt, newest)
}
