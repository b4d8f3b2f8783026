package index

import (
	"runtime"
	"sync"
)

// A load is a source's replay of every record it holds, between
// BeginLoad and EndLoad: a views bucket watched from its start, or, the
// same way, a snapshot restored.
//
// A load into an empty index is made in bulk: while the records come in,
// the index only keeps the entries (and a map of their ids, to replace a
// record delivered twice); EndLoad then adds every entry with the same
// add as a live Put, while every ordered structure is in bulk mode
// (chunked.Set.BeginBulk), in which adding appends; each structure is
// then sorted once and filled three quarters full, on as many goroutines
// as there are processors. That costs a sort per structure instead of a
// search and a move per record and structure, and bulk and live updates
// cannot drift apart: they are the same calls. Until EndLoad the index
// answers as if it were empty.

// BeginLoad starts a load. With replace, the loaded records replace the
// index's: each wins over the one held whatever its version, and a
// complete EndLoad drops every record the load did not put. Without, they
// are put as Put puts them.
func (b *Batch) BeginLoad(replace bool) {
	ix := b.ix
	ix.gen++
	ix.replacing = replace
	if ix.slots.n == 0 && ix.loading == nil {
		ix.loading = map[string]uint32{}
	}
}

// EndLoad ends the load BeginLoad started; complete reports whether the
// source delivered every record (false: the load was cut short, and
// nothing is dropped). It returns how many records a complete replacing
// load dropped.
func (b *Batch) EndLoad(complete bool) (dropped int) {
	ix := b.ix
	if ix.loading != nil {
		ix.finishLoad()
	}
	if complete && ix.replacing {
		dropped = ix.sweep()
	}
	ix.replacing = false
	return dropped
}

// Len returns how many records the index holds, counting those of a bulk
// load under way (Index.Len counts them once it ends).
func (b *Batch) Len() int {
	if b.ix.loading != nil {
		return len(b.ix.loading)
	}
	return b.ix.byID.Len()
}

// Loading reports whether a load is being made in bulk: the index answers
// as if it were empty until EndLoad.
func (b *Batch) Loading() bool { return b.ix.loading != nil }

// loadPut is putEntry in bulk mode. The caller holds the write lock.
func (ix *Index) loadPut(e entry, msg func() string) {
	if slot, ok := ix.loading[e.id]; ok {
		old := ix.slots.at(slot)
		old.gen = ix.gen
		if old.version > e.version && !ix.replacing {
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

// bulkSet is an ordered structure that can be filled in bulk.
type bulkSet interface {
	BeginBulk()
	EndBulk()
}

// sets returns every ordered structure of the index, in groups that one
// goroutine each sorts.
func (ix *Index) sets() [][]bulkSet {
	cs := &ix.counts
	out := [][]bulkSet{{&ix.byID}, {&cs.byEvent}, {&cs.byAggregate}, {&ix.due, &cs.ahead}}
	for f := range ix.orders {
		out = append(out, []bulkSet{&ix.orders[f]})
	}
	var cells, groups []bulkSet
	for ci := range cs.cells {
		cells = append(cells, &cs.cells[ci].exec, &cs.cells[ci].next)
	}
	for _, g := range cs.list {
		groups = append(groups, g.sets()...)
	}
	return append(out, cells, groups)
}

// finishLoad ends bulk mode: it adds every entry as putEntry adds a new
// one, with every structure in bulk mode, sorts the structures, and
// releases the waiters the loaded versions satisfy. The caller holds the
// write lock.
func (ix *Index) finishLoad() {
	ix.loading = nil
	for _, group := range ix.sets() {
		for _, s := range group {
			s.BeginBulk()
		}
	}
	ix.counts.bulk = true // the groups made meanwhile start in bulk mode
	ix.slots.each(func(slot uint32, e *entry) bool {
		ix.add(e, slot)
		return true
	})
	ix.counts.bulk = false
	var tasks []func()
	for _, group := range ix.sets() {
		tasks = append(tasks, func() {
			for _, s := range group {
				s.EndBulk()
			}
		})
	}
	runAll(tasks)
	for key := range ix.waiters {
		if slot, ok := ix.slotOf(key); ok {
			ix.notify(ix.slots.at(slot))
		}
	}
}

// sweep drops the records the current load did not put and returns how
// many. The caller holds the write lock.
func (ix *Index) sweep() int {
	var gone []string
	ix.slots.each(func(_ uint32, e *entry) bool {
		if e.gen != ix.gen {
			gone = append(gone, e.id)
		}
		return true
	})
	for _, id := range gone {
		ix.removePacked(id)
	}
	return len(gone)
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
