package index

import (
	"iter"
	"math"
	"math/bits"
	"slices"

	"github.com/amends-dev/amends/projection/index/internal/chunked"
)

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
	exec, next chunked.Multiset[int64]
	retries    retryHist
}

func (r *ranged) add(e *entry, delta int) {
	if delta > 0 {
		r.exec.Add(e.executeAt)
		r.next.Add(e.nextRetryAt)
	} else {
		r.exec.Remove(e.executeAt)
		r.next.Remove(e.nextRetryAt)
	}
	r.retries.add(e.retries, int32(delta))
}

// count returns how many of the set's records pass the filter's one
// bound (m.bound() must be one).
func (r *ranged) count(m *matcher) int {
	switch m.bound() {
	case boundExecuteAt:
		return r.exec.Between(m.from, m.to, !m.f.ExecuteAtTo.IsZero())
	case boundNextRetryAt:
		return r.next.Between(m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero())
	default:
		return r.retries.atLeast(m.f.MinRetries)
	}
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

// sideCells counts the records per cell of one group and one value of
// an aggregate context, aggregate type or function kind, keeping only the
// cells that have some: a bit per cell says which, and their counts
// follow in cell order, so that a cell's count is found by a population
// count and reading them walks only those.
type sideCells struct {
	has [numCells / 64]uint64
	n   []int32
}

// The cells fit sideCells' bits.
var _ [0]struct{} = [numCells % 64]struct{}{}

// at returns the position of cell ci's count in s.n (where it is or would
// go), its word and its bit.
func (s *sideCells) at(ci uint8) (i, word int, bit uint64) {
	word, bit = int(ci>>6), uint64(1)<<(ci&63)
	for w := range word {
		i += bits.OnesCount64(s.has[w])
	}
	return i + bits.OnesCount64(s.has[word]&(bit-1)), word, bit
}

func (s *sideCells) add(ci uint8, delta int32) {
	i, w, bit := s.at(ci)
	if s.has[w]&bit == 0 {
		s.has[w] |= bit
		s.n = slices.Insert(s.n, i, 0)
	}
	if s.n[i] += delta; s.n[i] == 0 {
		s.has[w] &^= bit
		s.n = slices.Delete(s.n, i, i+1)
	}
}

// cells yields every cell that has records, with its count, in cell
// order.
func (s *sideCells) cells() iter.Seq2[uint8, int32] {
	return func(yield func(uint8, int32) bool) {
		i := 0
		for w, word := range s.has {
			for word != 0 {
				ci := uint8(w*64 + bits.TrailingZeros64(word))
				word &= word - 1
				if !yield(ci, s.n[i]) {
					return
				}
				i++
			}
		}
	}
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
	pos     int // in counts.list
	n       cellCounts
	total   int
	classes [numClasses]ranged
	sides   [numSides]map[uint32]*sideCells
	// open holds the unfinished records by cell (pair.tag), then
	// executeAt.
	open chunked.Set[pair, byPair]
	// lo and hi are the smallest and largest executeAt of the unfinished
	// records of each cell that has some.
	lo, hi [numCells]int64
	// byExec holds them by executeAt alone.
	byExec chunked.Set[openRec, byOpenRec]
}

// sets returns g's ordered structures (see Index.sets).
func (g *group) sets() []bulkSet {
	out := []bulkSet{&g.open, &g.byExec}
	for c := range g.classes {
		out = append(out, &g.classes[c].exec, &g.classes[c].next)
	}
	return out
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
	ahead chunked.Set[pair, byPair]
	// byEvent and byAggregate hold hash(id)<<32 | slot of every record.
	byEvent, byAggregate chunked.Multiset[uint64]
	// bulk: a load is being made in bulk; a new group starts in bulk mode.
	bulk bool
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
			g.sides[d] = map[uint32]*sideCells{}
		}
		if cs.bulk {
			for _, s := range g.sets() {
				s.BeginBulk()
			}
		}
		g.pos = len(cs.list)
		cs.groups[gk] = g
		cs.list = append(cs.list, g)
	}
	return g
}

// cellEnds returns the smallest and largest executeAt of g's unfinished
// records of cell ci, of which there is at least one.
func (g *group) cellEnds(ci uint8) (lo, hi int64) {
	g.open.From(pair{tag: ci, at: -1 << 63}, func(p pair) bool { lo = p.at; return false })
	g.open.Before(pair{tag: ci + 1, at: -1 << 63}, false, func(p pair) bool { hi = p.at; return false })
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
	ix.trackIn(ix.counts.group(entryGroup(e)), e, slot)
}

// trackIn is track for e's group g.
func (ix *Index) trackIn(g *group, e *entry, slot uint32) {
	e.cell = e.cellAt(ix.cursor)
	g.total++
	k := &kinds[e.cell]
	k.classes(func(c int) { g.classes[c].add(e, 1) })
	if !k.finished {
		g.byExec.Add(newOpenRec(e, slot))
	}
	ix.countCell(g, e, slot, 1)
}

// untrack reverses track(e, slot). The caller holds the write lock.
func (ix *Index) untrack(e *entry, slot uint32) {
	cs := &ix.counts
	g := cs.groups[entryGroup(e)]
	g.total--
	k := &kinds[e.cell]
	k.classes(func(c int) { g.classes[c].add(e, -1) })
	if !k.finished {
		g.byExec.Remove(newOpenRec(e, slot))
	}
	ix.countCell(g, e, slot, -1)
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
			g.open.Add(p)
			if g.n[ci] == 1 || p.at < g.lo[ci] {
				g.lo[ci] = p.at
			}
			if g.n[ci] == 1 || p.at > g.hi[ci] {
				g.hi[ci] = p.at
			}
		} else {
			g.open.Remove(p)
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
			sc = &sideCells{}
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
	for _, p := range cs.ahead.PopWhile(func(p pair) bool { return p.at <= t }) {
		e := ix.slots.at(p.slot)
		if ci := e.cellAt(t); ci != e.cell {
			g := cs.groups[entryGroup(e)]
			ix.countCell(g, e, p.slot, -1)
			e.cell = ci
			ix.countCell(g, e, p.slot, 1)
		}
		if at, ok := e.nextChange(t); ok {
			cs.ahead.Add(pair{at: at, slot: p.slot})
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
	set.From(h<<32, func(k uint64) bool {
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
