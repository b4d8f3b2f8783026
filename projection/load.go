package projection

import (
	"runtime"
	"slices"
	"sync"
)

// The first load of an index is made in bulk: while the watch delivers
// the bucket's values, the index only keeps the entries (and a map of
// their ids, to replace a record delivered twice); once every value is in,
// finishLoad computes every order, count and lookup from the entries,
// sorting each once, and fills the chunked sets three quarters full. That
// costs a sort per structure instead of a search and a move per record
// and structure. Until then the index answers as if it were empty.

// beginLoad puts an index that holds nothing in bulk mode. The caller
// holds the write lock.
func (ix *Index) beginLoad() {
	if ix.slots.n == 0 && ix.loading == nil {
		ix.loading = map[string]uint32{}
	}
}

// loadPut is putEntry in bulk mode. The caller holds the write lock.
func (ix *Index) loadPut(e entry, msg func() string, force bool) {
	if slot, ok := ix.loading[e.id]; ok {
		old := ix.slots.at(slot)
		old.gen = ix.gen
		if old.version > e.version && !force {
			return
		}
		e.id = old.id // keep the bytes already held
		*old = e
		ix.keepSample(old, msg)
		return
	}
	slot := ix.slots.add(e)
	ix.loading[e.id] = slot
	ix.keepSample(ix.slots.at(slot), msg)
}

// loadRemove is removePacked in bulk mode. The caller holds the write
// lock.
func (ix *Index) loadRemove(p string) {
	if slot, ok := ix.loading[p]; ok {
		delete(ix.loading, p)
		ix.slots.free(slot)
	}
}

// groupLoad is what finishLoad gathers of one group before it sorts it.
type groupLoad struct {
	exec, next [numClasses][]int64
	open       []pair
	byExec     []openRec
}

// sideKey names the counts of one side value in one group.
type sideKey struct {
	g *group
	d int
	v uint32
}

// finishLoad ends bulk mode: it builds every order, count and lookup from
// the entries, and releases the waiters the loaded versions satisfy. The
// caller holds the write lock.
func (ix *Index) finishLoad() {
	live := len(ix.loading)
	ix.loading = nil
	cur := ix.cursor
	cs := &ix.counts
	loads := map[*group]*groupLoad{}
	sides := map[sideKey]*cellCounts{}
	var cellExec, cellNext [numCells][]int64
	byID, byEvent, byAgg := make([]uint64, 0, live), make([]uint64, 0, live), make([]uint64, 0, live)
	var orders [numSortFields][]pos
	for f := range orders {
		orders[f] = make([]pos, 0, live)
	}
	var due []pos
	var ahead []pair
	ix.slots.each(func(slot uint32, e *entry) bool {
		e.cell = e.cellAt(cur)
		k := &kinds[e.cell]
		g := cs.group(entryGroup(e))
		if g.load == nil {
			g.load = &groupLoad{}
			loads[g] = g.load
		}
		gl := g.load
		g.total++
		g.n[e.cell]++
		cs.all[e.cell]++
		k.classes(func(c int) {
			gl.exec[c] = append(gl.exec[c], e.executeAt)
			gl.next[c] = append(gl.next[c], e.nextRetryAt)
			g.classes[c].retries.add(e.retries, 1)
		})
		if !k.finished {
			gl.open = append(gl.open, pair{at: e.executeAt, slot: slot, tag: e.cell})
			gl.byExec = append(gl.byExec, newOpenRec(e, slot))
		}
		cellExec[e.cell] = append(cellExec[e.cell], e.executeAt)
		cellNext[e.cell] = append(cellNext[e.cell], e.nextRetryAt)
		cs.cells[e.cell].retries.add(e.retries, 1)
		for d, v := range e.sides() {
			cs.sideCounts(d, v)[e.cell]++
			k := sideKey{g, d, v}
			c := sides[k]
			if c == nil {
				c = &cellCounts{}
				sides[k] = c
			}
			c[e.cell]++
		}
		byID = append(byID, lookupKey(e.id, slot))
		byEvent = append(byEvent, lookupKey(e.eventID, slot))
		byAgg = append(byAgg, lookupKey(e.aggregateID, slot))
		if at, ok := e.nextChange(cur); ok {
			ahead = append(ahead, pair{at: at, slot: slot})
		}
		tie := tieOf(e.id)
		for f := range orders {
			orders[f] = append(orders[f], pos{sortField(f).key(e), tie, slot})
		}
		if e.dueCandidate() {
			due = append(due, pos{e.nextRetryAt, tie, slot})
		}
		return true
	})
	// Every task fills structures of its own.
	var tasks []func()
	for _, set := range []struct {
		s  *sorted[uint64]
		vs []uint64
	}{{&ix.byID, byID}, {&cs.byEvent, byEvent}, {&cs.byAggregate, byAgg}} {
		tasks = append(tasks, func() { slices.Sort(set.vs); set.s.build(set.vs) })
	}
	for f := range orders {
		tasks = append(tasks, func() { slices.SortFunc(orders[f], cmpPos); ix.orders[f].build(orders[f]) })
	}
	tasks = append(tasks, func() {
		slices.SortFunc(due, cmpPos)
		ix.due.build(due)
		slices.SortFunc(ahead, cmpPair)
		cs.ahead.build(ahead)
		for ci := range cs.cells {
			buildSorted(&cs.cells[ci].exec, cellExec[ci])
			buildSorted(&cs.cells[ci].next, cellNext[ci])
		}
	})
	tasks = append(tasks, func() {
		for g, gl := range loads {
			for c := range gl.exec {
				buildSorted(&g.classes[c].exec, gl.exec[c])
				buildSorted(&g.classes[c].next, gl.next[c])
			}
			slices.SortFunc(gl.open, cmpPair)
			g.open.build(gl.open)
			for i, p := range gl.open {
				if i == 0 || gl.open[i-1].tag != p.tag {
					g.lo[p.tag] = p.at
				}
				g.hi[p.tag] = p.at
			}
			slices.SortFunc(gl.byExec, cmpOpenRec)
			g.byExec.build(gl.byExec)
			g.load = nil
		}
	})
	tasks = append(tasks, func() {
		for k, cc := range sides {
			sc := &sparseCells{}
			for ci, n := range cc {
				if n != 0 {
					*sc = append(*sc, cellCount{cell: uint8(ci), n: n})
				}
			}
			k.g.sides[k.d][k.v] = sc
		}
	})
	runAll(tasks)
	for key := range ix.waiters {
		if slot, ok := ix.slotOf(key); ok {
			ix.notify(ix.slots.at(slot))
		}
	}
}

// buildSorted fills s with vs, sorting it.
func buildSorted(s *sorted[int64], vs []int64) {
	slices.Sort(vs)
	s.build(vs)
}

// runAll runs the tasks on as many goroutines as there are processors
// and returns once all are done.
func runAll(tasks []func()) {
	next := make(chan func())
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Go(func() {
			for t := range next {
				t()
			}
		})
	}
	for _, t := range tasks {
		next <- t
	}
	close(next)
	wg.Wait()
}
