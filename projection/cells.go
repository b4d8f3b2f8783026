package projection

import (
	"math"
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// Counts kept up to date on every put and remove, so that Count and
// Summary cost what their answer has, not what the index holds.
//
// Every record is in one cell: its status, recoverability, whether its
// retries are below maxRetries and, for the records whose views change as
// time passes, its situation at the index's now (whether its attempt has
// timed out, whether its nextRetryAt has passed). Within a cell every
// predicate of the aggregate, every view included, gives one answer, so a
// view is a set of cells. Which views hold in a cell is decided by calling
// aggregate.View.Contains on a representative state, so the counts follow
// the aggregate's predicates and not a copy of their conditions; a
// property test compares them with a scan.
//
// The index's now (Index.cursor) only moves forward: a query for a later
// now first moves the records whose situation changed by then to their
// new cell (counts.ahead holds, per such record, the next instant its
// situation changes). Each record moves at most twice per attempt.
//
// The records are also split into groups, one per (function context,
// processor, function, error code, fingerprint): the set of names a
// deployment's code can produce, not its traffic. A group counts its
// records per cell; keeps their executeAt and nextRetryAt sorted and a
// histogram of their retries per summary class (succeeded, retryable,
// exhausted, and prepared); per value of aggregate context, aggregate type
// and function kind, a count per cell; and its unfinished records in
// executeAt order, for the oldest and newest failure of any selection.
// Over all records the counts keep, per cell, the same sets and
// histogram, and per value of aggregate context, aggregate type and
// function kind a count per cell.

// combo numbers the four time situations of a record: bit 0 its attempt
// has timed out (Timeout), bit 1 now >= nextRetryAt.
type combo = int

const (
	comboTimedOut = 1
	comboNextDue  = 2
)

// cellIndex numbers the cells: status (0 unknown, then aggregate.Statuses),
// recoverability (likewise), below the threshold, situation.
func cellIndex(status, recover uint8, below bool, c combo) int {
	i := (int(status)*4+int(recover))*8 + c
	if below {
		i += 4
	}
	return i
}

const numCells = 4 * 4 * 2 * 4

// cellKind is what the predicates say of every record of one cell.
type cellKind struct {
	status, recover uint8
	below           bool
	combo           combo
	// in[v]: View v contains the cell's records.
	in [8]bool
	// changing: the views of the records of this status, recoverability
	// and threshold change with time; their cell follows the index's now.
	// The cells of the other records have situation 0 at every now.
	changing bool
	// retryable, exhausted, prepared, finished: the summary's per-group
	// counters (see addTo).
	retryable, exhausted, prepared, finished bool
}

// kinds holds the cellKind of every cell index.
var kinds = func() (out [numCells]cellKind) {
	for st := range uint8(4) {
		for rc := range uint8(4) {
			for _, below := range []bool{false, true} {
				for c := range 4 {
					out[cellIndex(st, rc, below, c)] = newCellKind(st, rc, below, c)
				}
			}
		}
	}
	return out
}()

func newCellKind(st, rc uint8, below bool, c combo) cellKind {
	k := cellKind{status: st, recover: rc, below: below, combo: c}
	const now = 1_000_000
	var in [4][8]bool
	for cc := range 4 {
		s := repState(st, rc, below, cc, now)
		for vi, v := range aggregate.Views {
			in[cc][vi] = v.Contains(&s, time.UnixMilli(now))
		}
	}
	k.in = in[c]
	for cc := 1; cc < 4; cc++ {
		k.changing = k.changing || in[cc] != in[0]
	}
	s := repState(st, rc, below, c, now)
	k.retryable = s.IsRetryable()
	k.finished = s.Status == aggregate.StatusSucceeded
	k.exhausted = !k.finished && !s.IsBelowRetryThreshold()
	k.prepared = !k.finished && s.Status == aggregate.StatusPrepared
	return k
}

// repState is a record of the cell in situation c at now (epoch ms).
func repState(st, rc uint8, below bool, c combo, now int64) aggregate.State {
	s := aggregate.State{
		ID:          "representative",
		ExecuteAt:   now,
		RetrySpec:   aggregate.RetrySpec{MaxRetries: 1},
		RetryState:  aggregate.RetryState{Retries: 1, TimeoutAt: now, NextRetryAt: now + 1},
		Status:      enumValue(aggregate.Statuses, st),
		Recoverable: enumValue(aggregate.Recoverabilities, rc),
	}
	if below {
		s.RetryState.Retries = 0
	}
	if c&comboTimedOut != 0 {
		s.RetryState.TimeoutAt = now - 1
	}
	if c&comboNextDue != 0 {
		s.RetryState.NextRetryAt = now
	}
	return s
}

// viewIndex is v's position in aggregate.Views, -1 for "".
func viewIndex(v aggregate.View) int {
	for i, w := range aggregate.Views {
		if w == v {
			return i
		}
	}
	return -1
}

// timeDependent[v] reports whether View v's answer depends on now for
// some record.
var timeDependent = func() (out [8]bool) {
	for _, k := range kinds {
		if !k.changing {
			continue
		}
		base := &kinds[cellIndex(k.status, k.recover, k.below, 0)]
		for vi := range aggregate.Views {
			out[vi] = out[vi] || k.in[vi] != base.in[vi]
		}
	}
	return out
}()

// baseCell is e's cell at situation 0.
func (e *entry) baseCell() int {
	return cellIndex(e.status, e.recover, e.retries < e.maxRetries, 0)
}

// cellAt returns e's cell at now t (epoch ms).
func (e *entry) cellAt(t int64) uint8 {
	ci := e.baseCell()
	if kinds[ci].changing {
		if e.timeoutAt < t {
			ci |= comboTimedOut
		}
		if t >= e.nextRetryAt {
			ci |= comboNextDue
		}
	}
	return uint8(ci)
}

// nextChange returns the first instant after t at which e's cell changes;
// ok is false if it never does.
func (e *entry) nextChange(t int64) (at int64, ok bool) {
	if !kinds[e.baseCell()].changing {
		return 0, false
	}
	at = math.MaxInt64
	if e.timeoutAt != math.MaxInt64 && e.timeoutAt+1 > t {
		at, ok = e.timeoutAt+1, true
	}
	if e.nextRetryAt > t && e.nextRetryAt <= at {
		at, ok = e.nextRetryAt, true
	}
	return at, ok
}

// The summary classes of a record: succeeded, retryable (unfinished and
// below the threshold), exhausted (unfinished, not below); prepared
// (unfinished and PREPARED) is counted besides.
const (
	classDone = iota
	classRetryable
	classExhausted
	classPrepared
	numClasses
)

// classes calls f with each summary class of a record of kind k.
func (k *cellKind) classes(f func(class int)) {
	switch {
	case k.finished:
		f(classDone)
	case k.below:
		f(classRetryable)
	default:
		f(classExhausted)
	}
	if k.prepared {
		f(classPrepared)
	}
}

// retryHist counts records per retry count, sorted by count.
type retryHist []retryCount

type retryCount struct{ r, n int32 }

func (h *retryHist) add(r int32, delta int32) {
	s := *h
	i := s.index(r)
	if i == len(s) || s[i].r != r {
		s = append(s, retryCount{})
		copy(s[i+1:], s[i:])
		s[i] = retryCount{r: r}
	}
	if s[i].n += delta; s[i].n == 0 {
		s = append(s[:i], s[i+1:]...)
	}
	*h = s
}

func (h retryHist) index(r int32) int {
	i := 0
	for i < len(h) && h[i].r < r {
		i++
	}
	return i
}

// atLeast returns the number of records with retries >= r.
func (h retryHist) atLeast(r int32) int {
	n := 0
	for _, c := range h[h.index(r):] {
		n += int(c.n)
	}
	return n
}

// ranged is a set of records by executeAt, by nextRetryAt and by retries.
type ranged struct {
	exec, next sorted[int64]
	retries    retryHist
}

func (r *ranged) add(e *entry, delta int) {
	if delta > 0 {
		r.exec.insert(e.executeAt)
		r.next.insert(e.nextRetryAt)
	} else {
		r.exec.remove(e.executeAt)
		r.next.remove(e.nextRetryAt)
	}
	r.retries.add(e.retries, int32(delta))
}

// count returns how many of the set's records pass the filter's one
// bound (m.bound() must be one).
func (r *ranged) count(m *matcher) int {
	switch m.bound() {
	case boundExecuteAt:
		return between(&r.exec, m.from, m.to, !m.f.ExecuteAtTo.IsZero())
	case boundNextRetryAt:
		return between(&r.next, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero())
	default:
		return r.retries.atLeast(m.f.MinRetries)
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

// cellCounts counts records per cell.
type cellCounts [numCells]int32

// sum returns the count of the cells in mask.
func (c *cellCounts) sum(mask *cellMask) int {
	n := 0
	for ci, x := range c {
		if x != 0 && mask[ci] {
			n += int(x)
		}
	}
	return n
}

// sparseCells counts records per cell, listing only the cells that have
// some, in cell order: for the small sets of one group and one aggregate
// context, aggregate type or function kind.
type sparseCells []cellCount

type cellCount struct {
	cell uint8
	n    int32
}

func (s *sparseCells) add(ci uint8, delta int32) {
	c := *s
	i := 0
	for i < len(c) && c[i].cell < ci {
		i++
	}
	if i == len(c) || c[i].cell != ci {
		c = append(c, cellCount{})
		copy(c[i+1:], c[i:])
		c[i] = cellCount{cell: ci}
	}
	if c[i].n += delta; c[i].n == 0 {
		c = append(c[:i], c[i+1:]...)
	}
	*s = c
}

// The names the groups do not split by, each counted per cell over all
// records and per group.
const (
	sideAggContext = iota
	sideAggType
	sideKind
	numSides
)

// sides returns e's value of each side name.
func (e *entry) sides() [numSides]uint32 {
	return [numSides]uint32{e.aggContext, e.aggType, uint32(e.kind)}
}

// groupKey names a group.
type groupKey struct{ ctx, proc, fn, code, fp uint32 }

// group counts the records of one groupKey.
type group struct {
	key     groupKey
	n       cellCounts
	total   int
	classes [numClasses]ranged
	sides   [numSides]map[uint32]*sparseCells
	// open holds the unfinished records by cell (pair.tag), then
	// executeAt.
	open chunkSet[pair, byPair]
	// lo and hi are the smallest and largest executeAt of the unfinished
	// records of each cell that has some.
	lo, hi [numCells]int64
	// byExec holds them by executeAt alone.
	byExec chunkSet[openRec, byOpenRec]
	load   *groupLoad // while finishLoad gathers the group
}

// counts is the Index's counted view of its records.
type counts struct {
	groups map[groupKey]*group
	list   []*group // the groups in creation order
	all    cellCounts
	cells  [numCells]ranged
	sides  [numSides]map[uint32]*cellCounts
	// ahead holds, for every record whose cell follows now, the next
	// instant after the index's now at which its cell changes.
	ahead chunkSet[pair, byPair]
	// byEvent and byAggregate hold hash(id)<<32 | slot of every record.
	byEvent, byAggregate sorted[uint64]
}

func newCounts() counts {
	cs := counts{groups: map[groupKey]*group{}}
	for d := range cs.sides {
		cs.sides[d] = map[uint32]*cellCounts{}
	}
	return cs
}

func entryGroup(e *entry) groupKey {
	return groupKey{e.fnContext, e.fnProcessor, e.fnName, e.errorCode, e.fingerprint}
}

// hash32 folds idTie to 32 bits.
func hash32(s string) uint64 {
	h := idTie(s)
	return (h ^ h>>32) & math.MaxUint32
}

func lookupKey(id string, slot uint32) uint64 { return hash32(id)<<32 | uint64(slot) }

// group returns the group of gk, made if it is new.
func (cs *counts) group(gk groupKey) *group {
	g := cs.groups[gk]
	if g == nil {
		g = &group{key: gk}
		for d := range g.sides {
			g.sides[d] = map[uint32]*sparseCells{}
		}
		cs.groups[gk] = g
		cs.list = append(cs.list, g)
	}
	return g
}

// cellEnds returns the smallest and largest executeAt of g's unfinished
// records of cell ci, of which there is at least one.
func (g *group) cellEnds(ci uint8) (lo, hi int64) {
	g.open.from(pair{tag: ci, at: -1 << 63}, func(p pair) bool { lo = p.at; return false })
	g.open.before(pair{tag: ci + 1, at: -1 << 63}, false, func(p pair) bool { hi = p.at; return false })
	return lo, hi
}

// sideCounts returns the counts of value v of side d, made if new.
func (cs *counts) sideCounts(d int, v uint32) *cellCounts {
	c := cs.sides[d][v]
	if c == nil {
		c = &cellCounts{}
		cs.sides[d][v] = c
	}
	return c
}

// track counts e, held in slot, in its cell at the index's now. The
// caller holds the write lock.
func (ix *Index) track(e *entry, slot uint32) {
	cs := &ix.counts
	g := cs.group(entryGroup(e))
	e.cell = e.cellAt(ix.cursor)
	g.total++
	k := &kinds[e.cell]
	k.classes(func(c int) { g.classes[c].add(e, 1) })
	if !k.finished {
		g.byExec.insert(newOpenRec(e, slot))
	}
	ix.countCell(g, e, slot, 1)
	cs.byEvent.insert(lookupKey(e.eventID, slot))
	cs.byAggregate.insert(lookupKey(e.aggregateID, slot))
	if at, ok := e.nextChange(ix.cursor); ok {
		cs.ahead.insert(pair{at: at, slot: slot})
	}
}

// untrack reverses track(e, slot). The caller holds the write lock.
func (ix *Index) untrack(e *entry, slot uint32) {
	cs := &ix.counts
	g := cs.groups[entryGroup(e)]
	g.total--
	k := &kinds[e.cell]
	k.classes(func(c int) { g.classes[c].add(e, -1) })
	if !k.finished {
		g.byExec.remove(newOpenRec(e, slot))
	}
	ix.countCell(g, e, slot, -1)
	cs.byEvent.remove(lookupKey(e.eventID, slot))
	cs.byAggregate.remove(lookupKey(e.aggregateID, slot))
	if at, ok := e.nextChange(ix.cursor); ok {
		cs.ahead.remove(pair{at: at, slot: slot})
	}
}

// countCell adds delta to the counts of e's cell: what depends on the
// cell and not only on the record. The caller holds the write lock.
func (ix *Index) countCell(g *group, e *entry, slot uint32, delta int) {
	cs := &ix.counts
	ci := e.cell
	g.n[ci] += int32(delta)
	if !kinds[ci].finished {
		p := pair{at: e.executeAt, slot: slot, tag: ci}
		if delta > 0 {
			g.open.insert(p)
			if g.n[ci] == 1 || p.at < g.lo[ci] {
				g.lo[ci] = p.at
			}
			if g.n[ci] == 1 || p.at > g.hi[ci] {
				g.hi[ci] = p.at
			}
		} else {
			g.open.remove(p)
			if g.n[ci] > 0 && (p.at == g.lo[ci] || p.at == g.hi[ci]) {
				g.lo[ci], g.hi[ci] = g.cellEnds(ci)
			}
		}
	}
	cs.all[ci] += int32(delta)
	cs.cells[ci].add(e, delta)
	for d, v := range e.sides() {
		cs.sideCounts(d, v)[ci] += int32(delta)
		sc := g.sides[d][v]
		if sc == nil {
			sc = &sparseCells{}
			g.sides[d][v] = sc
		}
		sc.add(ci, int32(delta))
	}
}

// advance moves the index's now to t (epoch ms) if t is later: every
// record whose situation changed by t moves to its new cell. The caller
// holds the write lock.
func (ix *Index) advance(t int64) {
	if t <= ix.cursor {
		return
	}
	ix.cursor = t
	cs := &ix.counts
	for _, p := range cs.ahead.popWhile(func(p pair) bool { return p.at <= t }) {
		e := ix.slots.at(p.slot)
		if ci := e.cellAt(t); ci != e.cell {
			g := cs.groups[entryGroup(e)]
			ix.countCell(g, e, p.slot, -1)
			e.cell = ci
			ix.countCell(g, e, p.slot, 1)
		}
		if at, ok := e.nextChange(t); ok {
			cs.ahead.insert(pair{at: at, slot: p.slot})
		}
	}
}

// candidates calls f with the slot of every record whose packed event id
// (or, with aggregate, aggregate id) is id, in no fixed order. The caller holds
// the read lock.
func (ix *Index) candidates(id string, aggregate bool, f func(slot uint32)) {
	set, h := &ix.counts.byEvent, hash32(id)
	if aggregate {
		set = &ix.counts.byAggregate
	}
	set.from(h<<32, func(k uint64) bool {
		if k>>32 != h {
			return false
		}
		slot := uint32(k)
		e := ix.slots.at(slot)
		if aggregate && e.aggregateID == id || !aggregate && e.eventID == id {
			f(slot)
		}
		return true
	})
}
