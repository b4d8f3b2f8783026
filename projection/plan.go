package projection

import (
	"slices"
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// How a query finds its records, cheapest first:
//
//   - a record id, event id or aggregate id: the few records that have it
//     (byID, counts.byEvent, counts.byAggregate), each checked with the
//     filter;
//   - otherwise the counts (cells.go), when the filter is one they
//     answer, at a cost that grows with the number of groups and cells,
//     not of records: see Count and Summary;
//   - otherwise every record.

// The bounds a filter can set besides names and cells.
const (
	boundNone = iota
	boundExecuteAt
	boundNextRetryAt
	boundMinRetries
	boundMany // more than one
)

// bound returns which of executeAt, nextRetryAt and minRetries the filter
// bounds.
func (m *matcher) bound() int {
	b := boundNone
	for i, set := range []bool{m.execBound, m.nextBound, m.f.MinRetries != 0} {
		if !set {
			continue
		}
		if b != boundNone {
			return boundMany
		}
		b = boundExecuteAt + i
	}
	return b
}

// side returns which of aggregate context, aggregate type and function
// kind the filter names, and the value; n counts them.
func (m *matcher) side() (d int, v uint32, n int) {
	for i, x := range [numSides]uint32{m.names[0], m.names[1], uint32(m.kind)} {
		if x != 0 {
			d, v, n = i, x, n+1
		}
	}
	return d, v, n
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
		if slot, ok := ix.slotOf(m.id); ok {
			visit(slot)
		}
	case m.f.EventID != "":
		ix.candidates(m.eventID, false, visit)
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

// cellMask marks the cells whose records pass a filter's status,
// recoverability and view.
type cellMask [numCells]bool

// cells returns the filter's cell mask; every reports whether it holds
// every cell (no status, recoverability or view). A view that depends on
// time selects the cells of the index's now.
func (m *matcher) cells() (mask cellMask, every bool) {
	vi := viewIndex(m.f.View)
	for ci := range kinds {
		k := &kinds[ci]
		mask[ci] = (m.stat == 0 || k.status == m.stat) && (m.rec == 0 || k.recover == m.rec) && (vi < 0 || k.in[vi])
	}
	return mask, m.stat == 0 && m.rec == 0 && vi < 0
}

// timed reports whether the filter's view depends on time.
func (m *matcher) timed() bool {
	vi := viewIndex(m.f.View)
	return vi >= 0 && timeDependent[vi]
}

// countFast answers Count from the counts; ok is false when they cannot.
// atNow reports whether the index's now is the filter's. The caller holds
// the read lock.
func (ix *Index) countFast(m *matcher, atNow bool) (n int, ok bool) {
	if m.none {
		return 0, true
	}
	sd, sv, sides := m.side()
	b := m.bound()
	if sides > 1 || b == boundMany || sides == 1 && b != boundNone || m.timed() && !atNow {
		return 0, false
	}
	mask, every := m.cells()
	cs := &ix.counts
	if !m.namesGroup() {
		switch {
		case sides == 1:
			if c := cs.sides[sd][sv]; c != nil {
				n = c.sum(&mask)
			}
		case b != boundNone:
			for ci := range cs.cells {
				if mask[ci] && cs.all[ci] != 0 {
					n += cs.cells[ci].count(m)
				}
			}
		default:
			n = cs.all.sum(&mask)
		}
		return n, true
	}
	if b != boundNone && !every {
		return 0, false
	}
	for _, g := range cs.list {
		if !m.groupMatches(g) {
			continue
		}
		switch {
		case sides == 1:
			if sc := g.sides[sd][sv]; sc != nil {
				for _, c := range *sc {
					if mask[c.cell] {
						n += int(c.n)
					}
				}
			}
		case b != boundNone:
			for _, c := range []int{classDone, classRetryable, classExhausted} {
				n += g.classes[c].count(m)
			}
		default:
			n += g.n.sum(&mask)
		}
	}
	return n, true
}

// summaryFast answers Summary from the counts; ok is false when they
// cannot. atNow reports whether the index's now is the filter's. The caller
// holds the read lock.
func (ix *Index) summaryFast(m *matcher, atNow bool) (sum Summary, ok bool) {
	sd, sv, sides := m.side()
	b := m.bound()
	mask, every := m.cells()
	names := m.namesGroup()
	if !atNow || sides > 1 || b == boundMany || sides == 1 && b != boundNone || b != boundNone && (!every || names) {
		return Summary{}, false
	}
	sum = Summary{Views: map[aggregate.View]int{}}
	if m.none {
		return sum, true
	}
	cs := &ix.counts
	var inCell [numCells]int // the selected records per cell
	if b != boundNone {
		for ci := range cs.cells {
			if cs.all[ci] != 0 {
				inCell[ci] = cs.cells[ci].count(m)
			}
		}
	}
	groups := map[summaryKey]*FailureGroup{}
	for _, g := range cs.list {
		if !m.groupMatches(g) {
			continue
		}
		var part FailureGroup
		open := 0
		add := func(ci uint8, n int) {
			k := &kinds[ci]
			inCell[ci] += n
			part.Total += n
			if k.retryable {
				part.Retryable += n
			}
			if k.exhausted {
				part.Exhausted += n
			}
			if k.prepared {
				part.Prepared += n
			}
			if !k.finished {
				open += n
			}
		}
		switch {
		case b != boundNone:
			var in [numClasses]int
			for c := range in {
				in[c] = g.classes[c].count(m)
			}
			part.Total = in[classDone] + in[classRetryable] + in[classExhausted]
			part.Retryable, part.Exhausted, part.Prepared = in[classRetryable], in[classExhausted], in[classPrepared]
			open = in[classRetryable] + in[classExhausted]
		case sides == 1:
			if sc := g.sides[sd][sv]; sc != nil {
				for _, c := range *sc {
					if mask[c.cell] {
						add(c.cell, int(c.n))
					}
				}
			}
		default:
			for ci, n := range g.n {
				if n != 0 && mask[ci] {
					add(uint8(ci), int(n))
				}
			}
		}
		if part.Total == 0 {
			continue
		}
		if open > 0 {
			oldest, newest := ix.openBounds(g, m, &mask, every, sides == 0 && (b == boundNone || b == boundExecuteAt))
			widen(&part, oldest, newest)
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
		if open > 0 {
			widen(fg, part.OldestFailureAt, part.NewestFailureAt)
		}
	}
	var statuses [4][4]int
	for ci, n := range inCell {
		if n == 0 {
			continue
		}
		k := &kinds[ci]
		statuses[k.status][k.recover] += n
		for vi := range aggregate.Views {
			if k.in[vi] {
				sum.Views[aggregate.Views[vi]] += n
			}
		}
	}
	for st := range statuses {
		for rc, n := range statuses[st] {
			if n > 0 {
				sum.ByStatus = append(sum.ByStatus, StatusCount{Status: enumValue(aggregate.Statuses, uint8(st)),
					Recoverable: enumValue(aggregate.Recoverabilities, uint8(rc)), Count: n})
			}
		}
	}
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	sortSummary(&sum)
	return sum, true
}

// openBounds returns the smallest and largest executeAt of g's unfinished
// records that match m, of which there is at least one, among the cells of
// mask (every: all cells). With byCell (the filter selects by nothing but names, cells and
// executeAt) they are those the group keeps per cell (lo, hi), or, with an
// executeAt range, the ends of the range in its unfinished summary
// classes. Otherwise g.byExec is read from each end until
// a record matches: what it holds of a record answers aggregate context,
// aggregate type, function kind, nextRetryAt and retries without reading
// the entry, which is read only for a status, recoverability or view. That
// reads a few records per group for a filter that selects a part of them
// independently of executeAt, and up to all of them for one that selects
// by nextRetryAt, which follows executeAt. The caller holds the read lock.
func (ix *Index) openBounds(g *group, m *matcher, mask *cellMask, every, byCell bool) (oldest, newest int64) {
	if !byCell {
		matches := func(r *openRec) bool {
			return m.quick(r) && (every && m.f.MinRetries <= 255 || m.match(ix.slots.at(r.slot)))
		}
	first:
		for _, c := range g.byExec.chunks {
			for i := range c {
				if matches(&c[i]) {
					oldest = c[i].at
					break first
				}
			}
		}
	last:
		for k := len(g.byExec.chunks) - 1; k >= 0; k-- {
			c := g.byExec.chunks[k]
			for i := len(c) - 1; i >= 0; i-- {
				if matches(&c[i]) {
					newest = c[i].at
					break last
				}
			}
		}
		return oldest, newest
	}
	found := false
	take := func(lo, hi int64) {
		if !found || lo < oldest {
			oldest = lo
		}
		if !found || hi > newest {
			newest = hi
		}
		found = true
	}
	if m.execBound {
		// The filter selects by executeAt alone: the ends of the range in
		// the unfinished summary classes.
		hasTo := !m.f.ExecuteAtTo.IsZero()
		for _, c := range []int{classRetryable, classExhausted} {
			set := &g.classes[c].exec
			if set.n == 0 {
				continue
			}
			lo, okLo := set.atLeast(m.from)
			hi, okHi := set.last(), true
			if hasTo {
				hi, okHi = set.below(m.to)
			}
			if okLo && okHi && lo <= hi && (!hasTo || lo < m.to) && hi >= m.from {
				take(lo, hi)
			}
		}
		return oldest, newest
	}
	for ci, n := range g.n {
		if n != 0 && mask[ci] && !kinds[ci].finished {
			take(g.lo[ci], g.hi[ci])
		}
	}
	return oldest, newest
}

// quick reports whether what r holds of a record passes the filter's
// aggregate context, aggregate type, function kind, bounds and (up to 255)
// minRetries.
func (m *matcher) quick(r *openRec) bool {
	return (m.names[0] == 0 || r.aggContext == m.names[0]) && (m.names[1] == 0 || r.aggType == m.names[1]) &&
		(m.kind == 0 || r.kind == m.kind) &&
		(!m.execBound || inBounds(r.at, m.from, m.to, !m.f.ExecuteAtTo.IsZero())) &&
		(!m.nextBound || inBounds(r.nextRetryAt, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero())) &&
		int32(r.retries) >= min(m.f.MinRetries, 255)
}

// widen extends g's failure times to oldest and newest as addTo does.
func widen(g *FailureGroup, oldest, newest int64) {
	if g.OldestFailureAt == 0 || oldest < g.OldestFailureAt {
		g.OldestFailureAt = oldest
	}
	g.NewestFailureAt = max(g.NewestFailureAt, newest)
}

// rlockAt read-locks the index for a query of f, first moving the index's
// now to f's now when that is later. It returns f with Now set to the now
// the query is answered at, and whether that is the index's now, so that
// the counts of views that depend on time hold for it.
//
// A query without a Now is answered at the index's now if that is between
// the clock's now when the query started and when it reads (another query
// may have moved it meanwhile: any instant of the query's run is its now);
// else at the clock's now, moved to first, or, if the clock went back, by
// reading the records. A query with a Now is answered at the index's now
// if that is the filter's, moved to first if it is not after the clock's
// now; else by reading the records. The caller unlocks ix.mu.RUnlock.
func (ix *Index) rlockAt(f Filter) (Filter, bool) {
	start := ix.clock.Now()
	want := f.Now
	if want.IsZero() {
		want = start
	}
	t := want.UnixMilli()
	for {
		ix.mu.RLock()
		cur := ix.cursor
		now := ix.clock.Now()
		switch {
		case f.Now.IsZero() && cur >= t && cur <= now.UnixMilli():
			f.Now = time.UnixMilli(cur)
			return f, true
		case !f.Now.IsZero() && cur == t:
			return f, true
		case cur > t || t > now.UnixMilli():
			if f.Now.IsZero() {
				f.Now = now
			}
			return f, false
		}
		ix.mu.RUnlock()
		ix.mu.Lock()
		ix.advance(t)
		ix.mu.Unlock()
	}
}
