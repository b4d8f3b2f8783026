package index

import (
	"time"

	"github.com/amends-dev/amends/api"
)

// How a query finds its records, cheapest first (plan decides, for every
// query but List, which walks its sort order):
//
//   - a filter that names a name no record holds: nothing;
//   - a record id, event id or aggregate id: the few records that have it
//     (byID, counts.byEvent, counts.byAggregate), each checked with the
//     filter;
//   - otherwise the counts (counts.go), when the filter's shape is one
//     they answer for the query (countable), at a cost that grows with
//     the number of groups and cells, not of records;
//   - otherwise every record.

// path is how a query finds its records.
type path int

const (
	viaNothing path = iota // the filter names a name no record holds
	viaLookup              // through the filter's record, event or aggregate id
	viaCounts              // from the counts
	viaScan                // reading every record
)

// query is what is asked, for countable.
type query int

const (
	countQuery query = iota
	summaryQuery
	fingerprintQuery
)

// The bounds a filter can set besides names and cells.
const (
	boundNone = iota
	boundExecuteAt
	boundNextRetryAt
	boundMinRetries
	boundMany // more than one
)

// shape is what of a filter decides whether and how the counts answer
// it: its bound, the side it names, whether it names group names, its
// cells.
type shape struct {
	bound int
	// sides counts the side names the filter names; side and value are
	// the last one's.
	sides, side int
	value       uint32
	names       bool // names any group name
	mask        cellMask
	every       bool // the mask holds every cell (no status, recoverability or view)
	timed       bool // the filter's view depends on time
}

// shapeOf returns m's shape.
func (m *matcher) shapeOf() shape {
	sh := shape{bound: m.bound(), names: m.group != groupKey{}}
	for d, v := range m.side {
		if v != 0 {
			sh.side, sh.value, sh.sides = d, v, sh.sides+1
		}
	}
	sh.mask, sh.every = m.cells()
	vi := viewIndex(m.f.View)
	sh.timed = vi >= 0 && timeDependent[vi]
	return sh
}

// plan returns how q finds the records of m; atNow reports whether the
// index's now is the filter's.
func (m *matcher) plan(q query, atNow bool) (path, shape) {
	sh := m.shapeOf()
	switch {
	case m.none:
		return viaNothing, sh
	case m.byLookup():
		return viaLookup, sh
	case m.f.IDPrefix != "":
		// No count knows ids: an id prefix is matched record by record.
		return viaScan, sh
	case countable(q, &sh, atNow):
		return viaCounts, sh
	}
	return viaScan, sh
}

// countable reports whether the counts answer q for a filter of shape sh:
// the one place that decides it.
//
// The counts keep, per cell, a count over all records, per side value
// and per group, and per group and summary class the executeAt and
// nextRetryAt sets and retries histogram that answer one bound. So they
// answer at most one side name or one bound, not both. A count of a view
// that depends on time holds at the index's now only; a summary counts
// every view, so it needs the index's now whatever its filter, and it
// answers a bound only over every cell and group (the classes hold no
// cells); the fingerprints are counted per group over every cell, without
// sides or bounds.
func countable(q query, sh *shape, atNow bool) bool {
	if sh.sides > 1 || sh.bound == boundMany || sh.sides == 1 && sh.bound != boundNone {
		return false
	}
	switch q {
	case countQuery:
		return (atNow || !sh.timed) && (sh.bound == boundNone || !sh.names || sh.every)
	case summaryQuery:
		return atNow && (sh.bound == boundNone || sh.every && !sh.names)
	default:
		return sh.every && sh.bound == boundNone && sh.sides == 0
	}
}

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

// each calls f for every record that matches m found by p (viaLookup or
// viaScan). The caller holds the read lock.
func (ix *Index) each(m *matcher, p path, f func(e *entry)) {
	switch p {
	case viaLookup:
		ix.lookup(m, func(_ uint32, e *entry) { f(e) })
	case viaScan:
		ix.slots.each(func(_ uint32, e *entry) bool {
			if m.match(e) {
				f(e)
			}
			return true
		})
	}
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

// countByCounts answers Count from the counts, for a filter of shape sh
// that countable takes. The caller holds the read lock.
func (ix *Index) countByCounts(m *matcher, sh *shape) (n int) {
	cs := &ix.counts
	if !sh.names {
		switch {
		case sh.sides == 1:
			if c := cs.sides[sh.side][sh.value]; c != nil {
				n = c.sum(&sh.mask)
			}
		case sh.bound != boundNone:
			for ci := range cs.cells {
				if sh.mask[ci] && cs.all[ci] != 0 {
					n += cs.cells[ci].count(m)
				}
			}
		default:
			n = cs.all.sum(&sh.mask)
		}
		return n
	}
	for _, g := range cs.list {
		if !m.group.covers(g.key) {
			continue
		}
		switch {
		case sh.sides == 1:
			if sc := g.sides[sh.side][sh.value]; sc != nil {
				for ci, c := range sc.cells() {
					if sh.mask[ci] {
						n += int(c)
					}
				}
			}
		case sh.bound != boundNone:
			for _, c := range []int{classDone, classRetryable, classExhausted} {
				n += g.classes[c].count(m)
			}
		default:
			n += g.n.sum(&sh.mask)
		}
	}
	return n
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
func (ix *Index) rlockAt(f api.Filter) (api.Filter, bool) {
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
