package projection

import (
	"math"
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// Counts kept up to date on every put and remove, so that Count and
// Summary cost what their answer has, not what the index holds.
//
// The records are split into groups, one per (function context,
// processor, function, error code, fingerprint): the set of names a
// deployment's code can produce, not its traffic. A group splits its
// records into cells by (status, recoverability, retries below
// maxRetries). Within a cell every time-independent predicate of the
// aggregate gives one answer; the time-dependent ones (Timeout, the
// nextRetryAt condition of CanNextRetry) are counted with sorted sets of
// the cell's timeoutAt and nextRetryAt, so a view's count at any now is
// a few binary searches per cell. Which cells need which set, and which
// views hold for a cell at each combination of "timed out" and "next
// retry passed", is decided by calling aggregate.View.Contains on a
// representative state, so the counts follow the aggregate's predicates
// and not a copy of their conditions (a property test compares them with
// a scan).

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
	// timed: some view depends on Timeout, so the cell keeps timeoutAt
	// (and the "timed out and next retry passed" threshold).
	timed bool
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
		if k.in[vi][0] != k.in[vi][comboTimedOut] || k.in[vi][comboNextDue] != k.in[vi][comboTimedOut|comboNextDue] {
			k.timed = true
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

// cell counts the records of one (group, cell index).
type cell struct {
	n         int
	executeAt sorted[int64]
	nextRetry sorted[int64]
	// timeoutAt and both (only if kind.timed): timeoutAt, and the instant
	// from which the record is both timed out and past nextRetryAt.
	timeoutAt, both sorted[int64]
	retries         []retryCount // sorted by r
}

type retryCount struct{ r, n int32 }

// bothFrom is the first instant (epoch ms) at which e is timed out and
// past its nextRetryAt; ok is false if it never times out.
func bothFrom(e *entry) (int64, bool) {
	if e.timeoutAt == math.MaxInt64 {
		return 0, false
	}
	return max(e.timeoutAt+1, e.nextRetryAt), true
}

func (c *cell) add(e *entry, k *cellKind) {
	c.n++
	c.executeAt.insert(e.executeAt)
	c.nextRetry.insert(e.nextRetryAt)
	if k.timed {
		c.timeoutAt.insert(e.timeoutAt)
		if t, ok := bothFrom(e); ok {
			c.both.insert(t)
		}
	}
	i := c.retryAt(e.retries)
	if i == len(c.retries) || c.retries[i].r != e.retries {
		c.retries = append(c.retries, retryCount{})
		copy(c.retries[i+1:], c.retries[i:])
		c.retries[i] = retryCount{r: e.retries}
	}
	c.retries[i].n++
}

func (c *cell) drop(e *entry, k *cellKind) {
	c.n--
	c.executeAt.remove(e.executeAt)
	c.nextRetry.remove(e.nextRetryAt)
	if k.timed {
		c.timeoutAt.remove(e.timeoutAt)
		if t, ok := bothFrom(e); ok {
			c.both.remove(t)
		}
	}
	if i := c.retryAt(e.retries); i < len(c.retries) && c.retries[i].r == e.retries {
		if c.retries[i].n--; c.retries[i].n == 0 {
			c.retries = append(c.retries[:i], c.retries[i+1:]...)
		}
	}
}

func (c *cell) retryAt(r int32) int {
	i := 0
	for i < len(c.retries) && c.retries[i].r < r {
		i++
	}
	return i
}

// minRetries returns the number of records with retries >= r.
func (c *cell) minRetries(r int32) int {
	n := 0
	for i := c.retryAt(r); i < len(c.retries); i++ {
		n += int(c.retries[i].n)
	}
	return n
}

// combos returns the number of the cell's records in each situation at
// now (epoch ms).
func (c *cell) combos(k *cellKind, now int64) (out [4]int) {
	due := c.nextRetry.atMost(now)
	if !k.timed {
		out[0], out[comboNextDue] = c.n-due, due
		return out
	}
	timedOut := c.timeoutAt.less(now)
	bothN := c.both.atMost(now)
	out[comboTimedOut|comboNextDue] = bothN
	out[comboTimedOut] = timedOut - bothN
	out[comboNextDue] = due - bothN
	out[0] = c.n - timedOut - due + bothN
	return out
}

// inView returns how many of the cell's records view vi holds at now.
func (c *cell) inView(k *cellKind, vi int, now int64) int {
	in := k.in[vi]
	if in[0] == in[1] && in[1] == in[2] && in[2] == in[3] {
		if in[0] {
			return c.n
		}
		return 0
	}
	n := 0
	for i, cnt := range c.combos(k, now) {
		if in[i] {
			n += cnt
		}
	}
	return n
}

// groupKey names a group.
type groupKey struct{ ctx, proc, fn, code, fp uint32 }

type group struct {
	key   groupKey
	cells [numCells]*cell
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
	c := g.cells[ci]
	if c == nil {
		c = &cell{}
		g.cells[ci] = c
	}
	c.add(e, &kinds[ci])
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
	if g := cs.groups[entryGroup(e)]; g != nil && g.cells[ci] != nil {
		g.cells[ci].drop(e, &kinds[ci])
	}
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
