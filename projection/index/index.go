package index

import (
	"fmt"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index/internal/chunked"
)

// Index answers queries over every record from memory. It is filled with
// Update (or Put), by whoever reads the records' source: projection.Index
// from the views bucket.
//
// Every method is safe for concurrent use; queries see the changes of
// the Updates that have returned.
type Index struct {
	clock aggregate.Clock

	mu      sync.RWMutex
	names   *interner
	slots   arena
	byID    chunked.Multiset[uint64] // lookupKey(id, slot) of every record: see slotOf
	orders  [numSortFields]chunked.Set[pos, byPos]
	due     chunked.Set[pos, byPos]
	waiters map[string][]waiter
	samples map[uint32]string // fingerprint → a message of it (fingerprints.go)
	counts  counts            // kept by order and unorder (counts.go)
	// loading holds the slot of every packed id while a load into an
	// empty index is made in bulk (load.go), nil otherwise.
	loading map[string]uint32
	// snapIDs holds lookupKey(id, slot) of every record a snapshot put
	// into the bulk load (LoadSnapshot), sorted: the records a load looks
	// up there besides in loading, which only holds those put since. A
	// million lookups of a map that size cost more than the rest of the
	// snapshot's reading.
	snapIDs []uint64
	// gen counts the loads begun; every entry remembers the load that
	// last put it, so a replacing load can drop what it did not put.
	gen uint32
	// replacing: a replacing load is running (BeginLoad).
	replacing bool
	// cursor is the index's now (epoch ms): the instant the records'
	// cells are of. It only moves forward (advance).
	cursor int64
}

// Option configures an Index. An option that cannot be applied makes New
// return an error wrapping ErrInvalidOption.
type Option func(*Index) error

// WithClock sets the clock that gives "now" to view filters that name no
// time (default: the system clock).
func WithClock(c aggregate.Clock) Option {
	return func(ix *Index) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		ix.clock = c
		return nil
	}
}

// timeNow is the default clock.
var timeNow = time.Now

// New returns an empty index.
func New(opts ...Option) (*Index, error) {
	ix := &Index{
		clock:   aggregate.ClockFunc(timeNow),
		names:   newInterner(),
		waiters: make(map[string][]waiter),
		counts:  newCounts(),
	}
	for _, o := range opts {
		if err := o(ix); err != nil {
			return nil, err
		}
	}
	ix.cursor = ix.clock.Now().UnixMilli()
	return ix, nil
}

// Len returns the number of records in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.byID.Len()
}

// Version returns the version of record id the index holds; 0 if none.
func (ix *Index) Version(id string) uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if slot, ok := ix.slotOf(packID(id)); ok {
		return ix.slots.at(slot).version
	}
	return 0
}

// Now returns the index's now: the instant its counts of the views that
// depend on time are of (see Count). It only moves forward.
func (ix *Index) Now() time.Time {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return time.UnixMilli(ix.cursor)
}

// Advance moves the index's now to t if t is later: every record whose
// situation changed by t moves to its new cell. Queries move it too; a
// caller that moves it while nobody asks (once a second, say) spares the
// next query after a quiet spell from moving every record at once.
func (ix *Index) Advance(t time.Time) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.advance(t.UnixMilli())
}

// slotOf returns the slot of the record of packed id p. byID holds a
// 32-bit hash of each id with its slot, 8 bytes a record where a map of
// the ids took about 30; the ids of equal hash are told apart by the
// entries. The caller holds the lock.
func (ix *Index) slotOf(p string) (slot uint32, ok bool) {
	h := hash32(p)
	ix.byID.From(h<<32, func(k uint64) bool {
		if k>>32 != h {
			return false
		}
		if s := uint32(k); ix.slots.at(s).id == p {
			slot, ok = s, true
			return false
		}
		return true
	})
	return slot, ok
}

// Put adds or replaces the record of v, as Update's Batch.Put does. It
// lets tools and benchmarks fill an index without a source.
func (ix *Index) Put(v api.View) {
	ix.Update(func(b *Batch) { b.Put(&v) })
}

// Remove drops record id, as Update's Batch.Remove does.
func (ix *Index) Remove(id string) {
	ix.Update(func(b *Batch) { b.Remove(id) })
}

// Update applies the changes f makes to b under the index's write lock:
// a query sees all of them or none. f must not call the index's other
// methods, nor keep b.
func (ix *Index) Update(f func(b *Batch)) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	f(&Batch{ix: ix})
}

// Batch is the changes of one Update.
type Batch struct{ ix *Index }

// Put adds or replaces the record of v. A view older than the one held is
// ignored, except during a replacing load (BeginLoad).
func (b *Batch) Put(v *api.View) { b.ix.put(v) }

// PutFields is Put for the fields of a view, as a decoder reads them
// without allocating: the index copies what it keeps and keeps none of
// f's bytes.
func (b *Batch) PutFields(f *Fields[[]byte]) { putFields(b.ix, f) }

// Remove drops record id; an id the index does not hold is ignored.
func (b *Batch) Remove(id string) { b.ix.remove(id) }

// put is Batch.Put. The caller holds the write lock.
func (ix *Index) put(v *api.View) {
	f := fieldsOf(v)
	putFields(ix, &f)
}

// putFields adds or replaces the record of f (Batch.Put). The caller
// holds the write lock.
func putFields[S text](ix *Index, f *Fields[S]) {
	ix.putEntry(newEntry(f, ix.names), func() string { return string(f.ErrorMsg) })
}

// putEntry adds or replaces the record of entry n; msg returns its error
// message. Every record comes in here, whatever its source. The caller
// holds the write lock.
func (ix *Index) putEntry(n entry, msg func() string) {
	n.gen = ix.gen
	if ix.loading != nil {
		ix.loadPut(n, msg)
		return
	}
	slot, ok := ix.slotOf(n.id)
	if !ok {
		slot = ix.slots.add(n)
		ix.add(ix.slots.at(slot), slot)
	} else {
		old := ix.slots.at(slot)
		old.gen = ix.gen
		if old.version > n.version && !ix.replacing {
			return
		}
		ix.unorder(old, slot)
		n.id = old.id // keep the bytes already held
		*old = n
		ix.order(old, slot)
	}
	e := ix.slots.at(slot)
	ix.keepSample(e, msg)
	ix.notify(e)
}

// remove drops record id. The caller holds the write lock.
func (ix *Index) remove(id string) { ix.removePacked(packID(id)) }

// removePacked drops the record of packed id p. The caller holds the
// write lock.
func (ix *Index) removePacked(p string) {
	if ix.loading != nil {
		ix.loadRemove(p)
		return
	}
	slot, ok := ix.slotOf(p)
	if !ok {
		return
	}
	ix.unorder(ix.slots.at(slot), slot)
	ix.byID.Remove(lookupKey(p, slot))
	ix.slots.free(slot)
}

// add puts the entry in slot, new to the index, in every structure: the
// id lookup, then what order does. A bulk load adds every entry with the
// same two halves, addKeys and track, on two goroutines (finishLoad).
func (ix *Index) add(e *entry, slot uint32) {
	ix.addKeys(e, slot)
	ix.track(e, slot)
}

// addKeys is the half of add that is not the counts: the id lookup and
// orderKeys. It reads e and writes nothing track reads or writes (e.cell
// is track's alone), so a bulk load runs the two at once.
func (ix *Index) addKeys(e *entry, slot uint32) {
	ix.byID.Add(lookupKey(e.id, slot))
	ix.orderKeys(e, slot)
}

// order adds e to the sort orders, to the due order if it can become
// due, to the lookups by event and aggregate, and to the counts:
// everything that depends on the record's fields.
func (ix *Index) order(e *entry, slot uint32) {
	ix.orderKeys(e, slot)
	ix.track(e, slot)
}

// orderKeys is the half of order that is not the counts (track).
func (ix *Index) orderKeys(e *entry, slot uint32) {
	tie := tieOf(e.id)
	for f := range ix.orders {
		ix.orders[f].Add(pos{sortField(f).key(e), tie, slot})
	}
	if e.dueCandidate() {
		ix.due.Add(pos{e.nextRetryAt, tie, slot})
	}
	cs := &ix.counts
	cs.byEvent.Add(lookupKey(e.eventID, slot))
	cs.byAggregate.Add(lookupKey(e.aggregateID, slot))
	if at, ok := e.nextChange(ix.cursor); ok {
		cs.ahead.Add(pair{at: at, slot: slot})
	}
}

// unorder reverses order(e, slot).
func (ix *Index) unorder(e *entry, slot uint32) {
	ix.untrack(e, slot)
	tie := tieOf(e.id)
	for f := range ix.orders {
		ix.orders[f].Remove(pos{sortField(f).key(e), tie, slot})
	}
	if e.dueCandidate() {
		ix.due.Remove(pos{e.nextRetryAt, tie, slot})
	}
	cs := &ix.counts
	cs.byEvent.Remove(lookupKey(e.eventID, slot))
	cs.byAggregate.Remove(lookupKey(e.aggregateID, slot))
	if at, ok := e.nextChange(ix.cursor); ok {
		cs.ahead.Remove(pair{at: at, slot: slot})
	}
}

// Walk returns the ids of up to n records after cursor in the index's
// own order (by a hash of the id), and the cursor to pass next: 0 once
// the last record is returned, when the walk starts over. A walk over a
// changing index returns each record that stays in it at least once a
// round; it is how a source checks every record in turn. Safe for
// concurrent use.
func (ix *Index) Walk(cursor uint64, n int) (ids []string, next uint64) {
	if n <= 0 {
		return nil, cursor
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ix.byID.From(cursor, func(k uint64) bool {
		if len(ids) == n {
			next = k
			return false
		}
		ids = append(ids, unpackID(ix.slots.at(uint32(k)).id))
		return true
	})
	return ids, next
}
