package projection

import (
	"math"
	"slices"
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// Counts kept up to date on every put and remove, so that Count and
// Summary cost what their answer has, not what the index holds.
//
// The records are split into groups, one per (function context,
// processor, function, error code, fingerprint): the set of names a
// deployment's code can produce, not its traffic. A group counts its
// records per cell (status, recoverability, retries below maxRetries),
// and keeps sorted sets of their executeAt and nextRetryAt, a histogram
// of their retries and, for each view that depends on now, the instants
// at which records enter or leave it: so a query that does not select by
// status or recoverability costs a few binary searches per group. Each
// cell keeps the same (without nextRetryAt) for the queries that do.
//
// Within a cell every time-independent predicate of the aggregate gives
// one answer; the time-dependent ones only change when a record's attempt
// times out (Timeout) and when its nextRetryAt passes (CanNextRetry).
// Which views hold in a cell, before, between and after those two
// instants, is decided by calling aggregate.View.Contains on
// representative states, so the counts follow the aggregate's predicates
// and not a copy of their conditions; a property test compares them with
// a scan.

// cellIndex numbers the cells of a group: status (0 unknown, then
// aggregate.Statuses), recoverability (likewise), below the threshold.
func cellIndex(status, recover uint8, below bool) int {
	i := int(status)*8 + int(recover)*2
	if below {
		i++
	}
	return i
}

const numCells = 4 * 4 * 2

// combo numbers the four time-dependent situations of a record at a now:
// bit 0 its attempt has timed out (Timeout), bit 1 now >= nextRetryAt.
type combo = int

const (
	comboTimedOut = 1
	comboNextDue  = 2
)

// cellKind is what the predicates say of every record of one cell.
type cellKind struct {
	status, recover uint8
	below           bool
	// in[v][c]: View v contains the cell's records in situation c.
	in [8][4]bool
	// changing: some view's answer changes with now in the cell.
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
				out[cellIndex(st, rc, below)] = newCellKind(st, rc, below)
			}
		}
	}
	return out
}()

func newCellKind(st, rc uint8, below bool) cellKind {
	k := cellKind{status: st, recover: rc, below: below}
	const now = 1_000_000
	for c := range 4 {
		s := repState(st, rc, below, c, now)
		for vi, v := range aggregate.Views {
			k.in[vi][c] = v.Contains(&s, time.UnixMilli(now))
		}
	}
	for vi := range aggregate.Views {
		for c := 1; c < 4; c++ {
			k.changing = k.changing || k.in[vi][c] != k.in[vi][0]
		}
	}
	s := repState(st, rc, below, 0, now)
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
// some cell.
var timeDependent = func() (out [8]bool) {
	for _, k := range kinds {
		for vi := range aggregate.Views {
			for c := 1; c < 4; c++ {
				if k.in[vi][c] != k.in[vi][0] {
					out[vi] = true
				}
			}
		}
	}
	return out
}()

// timedViews are the positions in aggregate.Views of the views that
// depend on now.
var timedViews = func() (out []int) {
	for vi := range aggregate.Views {
		if timeDependent[vi] {
			out = append(out, vi)
		}
	}
	if len(out) > maxTimedViews {
		panic("projection: more views depend on time than maxTimedViews")
	}
	return out
}()

// maxTimedViews bounds timedViews: to-retry, executing, next-retry.
const maxTimedViews = 3

// timed counts, for each view that depends on now, how many records of a
// set it holds at any now: a record's membership changes at most at two
// instants (when its attempt times out, when its nextRetryAt passes), so
// the count at now is the records in the view before both, plus those
// that enter by now, minus those that leave by now.
type timed struct {
	before [maxTimedViews]int
	// sets[2i] and sets[2i+1]: the instants at which records enter and
	// leave timed view i; nil while empty (a view only enters or only
	// leaves in most cells).
	sets [2 * maxTimedViews]*sorted[int64]
}

// changes calls f for each instant at which e's membership in view vi
// changes, with whether it enters; before is its membership before both.
func changes(e *entry, k *cellKind, vi int, f func(at int64, enter bool)) (before bool) {
	in := &k.in[vi]
	tB := e.nextRetryAt // next retry passed: now >= tB
	if e.timeoutAt == math.MaxInt64 {
		if in[comboNextDue] != in[0] {
			f(tB, in[comboNextDue])
		}
		return in[0]
	}
	tA := e.timeoutAt + 1 // timed out: now >= tA
	first, mid := tA, comboTimedOut
	if tB < tA {
		first, mid = tB, comboNextDue
	} else if tB == tA {
		mid = comboTimedOut | comboNextDue
	}
	if in[mid] != in[0] {
		f(first, in[mid])
	}
	if last := max(tA, tB); in[comboTimedOut|comboNextDue] != in[mid] {
		f(last, in[comboTimedOut|comboNextDue])
	}
	return in[0]
}

func (t *timed) add(e *entry, k *cellKind, delta int) {
	for i, vi := range timedViews {
		before := changes(e, k, vi, func(at int64, enter bool) {
			j := 2 * i
			if !enter {
				j++
			}
			if t.sets[j] == nil {
				t.sets[j] = &sorted[int64]{}
			}
			if delta > 0 {
				t.sets[j].insert(at)
			} else {
				t.sets[j].remove(at)
			}
		})
		if before {
			t.before[i] += delta
		}
	}
}

// at returns how many of the set's records timed view i holds at now.
func (t *timed) at(i int, now int64) int {
	n := t.before[i]
	if s := t.sets[2*i]; s != nil {
		n += s.atMost(now)
	}
	if s := t.sets[2*i+1]; s != nil {
		n -= s.atMost(now)
	}
	return n
}

// cell counts the records of one (group, cell index).
type cell struct {
	n         int
	executeAt sorted[int64]
	views     *timed // nil if no view changes with now in the cell's kind
	retries   retryHist
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

func (c *cell) add(e *entry, k *cellKind, delta int) {
	c.n += delta
	if delta > 0 {
		c.executeAt.insert(e.executeAt)
	} else {
		c.executeAt.remove(e.executeAt)
	}
	if k.changing {
		if c.views == nil {
			c.views = &timed{}
		}
		c.views.add(e, k, delta)
	}
	c.retries.add(e.retries, int32(delta))
}

// inView returns how many of the cell's records view vi holds at now.
func (c *cell) inView(k *cellKind, vi int, now int64) int {
	in := k.in[vi]
	if !k.changing || !timeDependent[vi] {
		if in[0] {
			return c.n
		}
		return 0
	}
	return c.views.at(slices.Index(timedViews, vi), now)
}

// groupKey names a group.
type groupKey struct{ ctx, proc, fn, code, fp uint32 }

// group counts the records of one groupKey: per cell, and for queries
// that do not select by status or recoverability, over the whole group.
type group struct {
	key   groupKey
	n     [numCells]int32
	cells [numCells]*cell
	// open and done: executeAt of the unfinished and of the succeeded
	// records; nextRetry: of every record.
	open, done sorted[int64]
	nextRetry  sorted[int64]
	views      timed
	retries    retryHist
}

func (g *group) add(e *entry, ci int, delta int) {
	k := &kinds[ci]
	g.n[ci] += int32(delta)
	exec := &g.open
	if k.finished {
		exec = &g.done
	}
	if delta > 0 {
		exec.insert(e.executeAt)
		g.nextRetry.insert(e.nextRetryAt)
	} else {
		exec.remove(e.executeAt)
		g.nextRetry.remove(e.nextRetryAt)
	}
	g.views.add(e, k, delta)
	g.retries.add(e.retries, int32(delta))
	c := g.cells[ci]
	if c == nil {
		c = &cell{}
		g.cells[ci] = c
	}
	c.add(e, k, delta)
}

// nameCounts counts the records of one value of a name the groups do not
// split by (aggregate context and type, function kind), per cell index.
type nameCounts [numCells]int

// counts is the Index's counted view of its records.
type counts struct {
	groups  map[groupKey]*group
	list    []*group // the groups in creation order
	aggCtx  map[uint32]*nameCounts
	aggType map[uint32]*nameCounts
	kind    [8]nameCounts
	// views is timed over every record, for the queries that name no group.
	views timed
	// byEvent and byAggregate hold hash(id)<<32 | slot of every record.
	byEvent, byAggregate sorted[uint64]
}

func newCounts() counts {
	return counts{groups: map[groupKey]*group{}, aggCtx: map[uint32]*nameCounts{}, aggType: map[uint32]*nameCounts{}}
}

func entryGroup(e *entry) groupKey {
	return groupKey{e.fnContext, e.fnProcessor, e.fnName, e.errorCode, e.fingerprint}
}

func (e *entry) cellIndex() int {
	return cellIndex(e.status, e.recover, e.retries < e.maxRetries)
}

// hash32 folds idTie to 32 bits.
func hash32(s string) uint64 {
	h := idTie(s)
	return (h ^ h>>32) & math.MaxUint32
}

func lookupKey(id string, slot uint32) uint64 { return hash32(id)<<32 | uint64(slot) }

// track counts e, held in slot. The caller holds the write lock.
func (ix *Index) track(e *entry, slot uint32) {
	cs := &ix.counts
	gk := entryGroup(e)
	g := cs.groups[gk]
	if g == nil {
		g = &group{key: gk}
		cs.groups[gk] = g
		cs.list = append(cs.list, g)
	}
	ci := e.cellIndex()
	g.add(e, ci, 1)
	cs.views.add(e, &kinds[ci], 1)
	nameCountsOf(cs.aggCtx, e.aggContext)[ci]++
	nameCountsOf(cs.aggType, e.aggType)[ci]++
	cs.kind[e.kind][ci]++
	cs.byEvent.insert(lookupKey(e.eventID, slot))
	cs.byAggregate.insert(lookupKey(e.aggregateID, slot))
}

// untrack reverses track(e, slot). The caller holds the write lock.
func (ix *Index) untrack(e *entry, slot uint32) {
	cs := &ix.counts
	ci := e.cellIndex()
	cs.groups[entryGroup(e)].add(e, ci, -1)
	cs.views.add(e, &kinds[ci], -1)
	cs.aggCtx[e.aggContext][ci]--
	cs.aggType[e.aggType][ci]--
	cs.kind[e.kind][ci]--
	cs.byEvent.remove(lookupKey(e.eventID, slot))
	cs.byAggregate.remove(lookupKey(e.aggregateID, slot))
}

func nameCountsOf(m map[uint32]*nameCounts, id uint32) *nameCounts {
	c := m[id]
	if c == nil {
		c = &nameCounts{}
		m[id] = c
	}
	return c
}

// candidates calls f with the slot of every record whose event id (or,
// with aggregate, aggregate id) is id, in no fixed order. The caller holds
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
