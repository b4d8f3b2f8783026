package index

import (
	"runtime"
	"slices"
	"sync"

	"github.com/amends-dev/amends/aggregate"
)

// A load is a source's replay of every record it holds, between
// BeginLoad and EndLoad: a views bucket watched from its start, or, the
// same way, a snapshot restored.
//
// A load into an empty index is made in bulk: while the records come in,
// the index only keeps the entries (and a map of their ids, to replace a
// record delivered twice; a snapshot's records, whose ids are distinct,
// go into a sorted array of their lookup keys instead); EndLoad then adds
// every entry with the same add as a live Put, while every ordered
// structure is in bulk mode (chunked.Set.BeginBulk), in which adding
// appends; each structure is then sorted once and filled three quarters
// full. That costs a sort per structure instead of a search and a move
// per record and structure, and bulk and live updates cannot drift apart:
// they are the same calls. add's two halves share no structure, so they
// run on two goroutines, each sorting what it filled: addKeys (the id
// lookup and the orders) in slot order, track (the counts) a group at a
// time, so that a group's counts stay in the cache. At 1 M records the
// restore of a snapshot took 2.7 s before this and 1.3 s after
// (BenchmarkSnapshot, 2 cores). Until EndLoad the index answers as
// if it were empty.

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
		return b.ix.slots.len() // the index was empty: every entry is the load's
	}
	return b.ix.byID.Len()
}

// Loading reports whether a load is being made in bulk: the index answers
// as if it were empty until EndLoad.
func (b *Batch) Loading() bool { return b.ix.loading != nil }

// loadPut is putEntry in bulk mode. The caller holds the write lock.
func (ix *Index) loadPut(e entry, msg func() string) {
	if slot, ok := ix.loadSlot(e.id); ok {
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
	if slot, ok := ix.loadSlot(p); ok {
		delete(ix.loading, p)
		ix.slots.free(slot) // its key in snapIDs no longer finds it: the slot's id is not p
	}
}

// loadSlot returns the slot of the record of packed id p in bulk mode.
// The caller holds the lock.
func (ix *Index) loadSlot(p string) (uint32, bool) {
	if slot, ok := ix.loading[p]; ok {
		return slot, true
	}
	return ix.snapSlot(p)
}

// snapSlot finds the record of packed id p among snapIDs.
func (ix *Index) snapSlot(p string) (slot uint32, ok bool) {
	h := hash32(p)
	keys := ix.snapIDs
	i, _ := slices.BinarySearch(keys, h<<32)
	for ; i < len(keys) && keys[i]>>32 == h; i++ {
		if s := uint32(keys[i]); ix.slots.at(s).id == p {
			return s, true
		}
	}
	return 0, false
}

// bulkSet is an ordered structure that can be filled in bulk.
type bulkSet interface {
	BeginBulk()
	EndBulk()
}

// keySets returns the ordered structures addKeys fills.
func (ix *Index) keySets() []bulkSet {
	cs := &ix.counts
	out := []bulkSet{&ix.byID, &cs.byEvent, &cs.byAggregate, &ix.due, &cs.ahead}
	for f := range ix.orders {
		out = append(out, &ix.orders[f])
	}
	return out
}

// countSets returns the ordered structures track fills: the cells' and
// the groups'.
func (ix *Index) countSets() []bulkSet {
	cs := &ix.counts
	var out []bulkSet
	for ci := range cs.cells {
		out = append(out, &cs.cells[ci].exec, &cs.cells[ci].next)
	}
	for _, g := range cs.list {
		out = append(out, g.sets()...)
	}
	return out
}

// finishLoad ends bulk mode: it adds every entry as putEntry adds a new
// one, with every structure in bulk mode, sorts the structures, and
// releases the waiters the loaded versions satisfy. add's two halves,
// addKeys and track, share no structure: each runs on a goroutine of its
// own and sorts what it filled. The caller holds the write lock.
func (ix *Index) finishLoad() {
	ix.loading, ix.snapIDs = nil, nil
	keys, counts := ix.keySets(), ix.countSets()
	for _, s := range append(keys, counts...) {
		s.BeginBulk()
	}
	ix.counts.bulk = true // the groups made meanwhile start in bulk mode
	runAll([]func(){
		func() {
			ix.slots.each(func(slot uint32, e *entry) bool {
				ix.addKeys(e, slot)
				return true
			})
			endBulk(keys)
		},
		func() {
			ix.trackAll()
			endBulk(ix.countSets())
		},
	})
	ix.counts.bulk = false
	for key := range ix.waiters {
		if slot, ok := ix.slotOf(key); ok {
			ix.notify(ix.slots.at(slot))
		}
	}
}

func endBulk(sets []bulkSet) {
	for _, s := range sets {
		s.EndBulk()
	}
}

// trackAll tracks every entry as track does, a group's entries together:
// their group's counts stay in the cache while its records are added,
// which at 1 M records of 5 000 groups takes half the time of slot order.
// The caller holds the write lock; nothing else may touch the counts.
func (ix *Index) trackAll() {
	cs := &ix.counts
	// A counting sort of the slots by group.
	of := make([]int32, ix.slots.n) // the group's position, -1: a free slot
	var per []int
	for slot := range ix.slots.n {
		e := ix.slots.at(slot)
		if e.id == "" {
			of[slot] = -1
			continue
		}
		g := cs.group(entryGroup(e))
		for len(per) <= g.pos {
			per = append(per, 0)
		}
		of[slot] = int32(g.pos)
		per[g.pos]++
	}
	next := make([]int, len(per)+1)
	for i, n := range per {
		next[i+1] = next[i] + n
	}
	order := make([]uint32, next[len(per)])
	for slot, gp := range of {
		if gp >= 0 {
			order[next[gp]] = uint32(slot)
			next[gp]++
		}
	}
	for _, slot := range order {
		ix.trackIn(cs.list[of[slot]], ix.slots.at(slot), slot)
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

// Held is what the index holds of a record that a source checks against
// its own: the record's version, status and function's processor.
type Held struct {
	Version   uint64
	Status    aggregate.Status
	Processor string
}

// Held returns what the index holds of record id, a load's records
// included, and whether it holds the record.
func (b *Batch) Held(id string) (Held, bool) {
	ix, p := b.ix, packID(id)
	slot, ok := ix.slotOf(p)
	if ix.loading != nil {
		slot, ok = ix.loadSlot(p)
	}
	if !ok {
		return Held{}, false
	}
	e := ix.slots.at(slot)
	return Held{Version: e.version, Status: enumValue(aggregate.Statuses, e.status), Processor: ix.names.name(e.fnProcessor)}, true
}

// RemoveIf removes every record for which drop, given its function's
// processor and its id, returns true, and returns how many it removed:
// what a source drops when it stops holding some of its records (a
// partition that moved to another instance). During a bulk load it
// removes from the load's records.
func (b *Batch) RemoveIf(drop func(processor, id string) bool) int {
	ix := b.ix
	var gone []string
	ix.slots.each(func(_ uint32, e *entry) bool {
		if drop(ix.names.name(e.fnProcessor), unpackID(e.id)) {
			gone = append(gone, e.id)
		}
		return true
	})
	for _, p := range gone {
		ix.removePacked(p)
	}
	return len(gone)
}

// Sample returns the ids of up to n records the index holds, a load's
// included, spread evenly over them from a start that seed picks: what a
// source checks a snapshot's records by.
func (b *Batch) Sample(n int, seed uint64) []string {
	a := &b.ix.slots
	if n <= 0 || a.n == 0 {
		return nil
	}
	step := max(uint32(a.len()/n), 1)
	start := uint32(seed % uint64(a.n))
	out := make([]string, 0, n)
	for i := uint32(0); i < a.n && len(out) < n; i += step {
		if e := a.at((start + i) % a.n); e.id != "" {
			out = append(out, unpackID(e.id))
		}
	}
	return out
}

// Unload drops the records of a load into an empty index (made in bulk)
// that has not ended, such as a snapshot's that its source found not to
// match it: the index is empty again and the load goes on. It returns
// ErrNotEmpty for any other load.
func (b *Batch) Unload() error {
	ix := b.ix
	if ix.loading == nil {
		return ErrNotEmpty
	}
	ix.slots = arena{}
	ix.loading, ix.snapIDs = map[string]uint32{}, nil
	clear(ix.samples)
	return nil
}
