package projection

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// HistoryStore is what the Index needs of the event store for History.
// *jsstore.Store satisfies it.
type HistoryStore interface {
	// Load returns the aggregate's streams from version from on, or an
	// error matching eventstore.ErrNotFound.
	Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error)
}

// Index answers queries over every record from memory: built from the
// views bucket when Run starts (one read per record, no event replay) and
// kept current by watching the bucket. Several instances may each keep
// their own Index on one bucket.
//
// Queries are safe for concurrent use with each other and with Run; they
// see the records Run has applied so far (see Ready and WaitFor).
type Index struct {
	views   jetstream.KeyValue
	history HistoryStore
	clock   aggregate.Clock
	logger  *slog.Logger
	// checkEvery is how often the watch checks that the bucket is still
	// the one it started on.
	checkEvery time.Duration

	mu      sync.RWMutex
	names   *interner
	slots   arena
	byID    sorted[uint64] // lookupKey(id, slot) of every record: see slotOf
	orders  [numSortFields]chunkSet[pos, byPos]
	due     chunkSet[pos, byPos]
	waiters map[string][]waiter
	// gen counts the watches Run started; every entry and corrupt key
	// remembers the watch that last delivered it, so a restarted watch's
	// initial values can sweep what the bucket no longer holds.
	gen     uint32
	corrupt map[string]corruptKey // keys holding a value that is not a valid view
	// repair is told to reproject the corrupt keys (repair.go).
	repair      chan struct{}
	reprojector Reprojector
	bucket      *kvstore.Bucket // the views, to report the invalid ones
	quarantine  *quarantine.Quarantine
	samples     map[uint32]string // fingerprint → a message of it (fingerprints.go)
	counts      counts            // kept by order and unorder (cells.go)
	// loading holds the slot of every packed id while the first load is
	// made in bulk (load.go), nil otherwise.
	loading map[string]uint32
	// cursor is the index's now (epoch ms): the instant the records'
	// cells are of. It only moves forward (advance).
	cursor int64

	ready     chan struct{}
	readyOnce sync.Once
	health    atomic.Pointer[error] // nil: current
}

// IndexOption configures an Index. An option that cannot be applied makes
// NewIndex return an error wrapping ErrInvalidOption.
type IndexOption func(*Index) error

// WithClock sets the clock that gives "now" to view filters that name no
// time (default: the system clock).
func WithClock(c aggregate.Clock) IndexOption {
	return func(ix *Index) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		ix.clock = c
		return nil
	}
}

// WithIndexLogger sets the logger of the index's watch (default
// slog.Default()): it logs when the watch stops and is restarted.
func WithIndexLogger(l *slog.Logger) IndexOption {
	return func(ix *Index) error {
		if l == nil {
			return fmt.Errorf("logger is nil: %w", ErrInvalidOption)
		}
		ix.logger = l
		return nil
	}
}

// WithBucketCheck sets how often the index checks that the bucket it
// watches is still the one it loaded (default 30s): a bucket deleted and
// created again (the read model rebuilt) continues its sequence numbers
// from 1, which the watch cannot notice by itself; the index then loads
// the new bucket. d must be positive.
func WithBucketCheck(d time.Duration) IndexOption {
	return func(ix *Index) error {
		if d <= 0 {
			return fmt.Errorf("bucket check interval must be positive, got %s: %w", d, ErrInvalidOption)
		}
		ix.checkEvery = d
		return nil
	}
}

// NewIndex returns an empty index of the views bucket; Run fills it.
// history serves History; it does no I/O.
func NewIndex(views jetstream.KeyValue, history HistoryStore, opts ...IndexOption) (*Index, error) {
	ix := &Index{
		views:      views,
		history:    history,
		clock:      aggregate.ClockFunc(timeNow),
		logger:     slog.Default(),
		names:      newInterner(),
		checkEvery: 30 * time.Second,
		waiters:    make(map[string][]waiter),
		corrupt:    make(map[string]corruptKey),
		repair:     make(chan struct{}, 1),
		counts:     newCounts(),
		ready:      make(chan struct{}),
	}
	ix.setHealth(errNotLoaded)
	for _, o := range opts {
		if err := o(ix); err != nil {
			return nil, err
		}
	}
	ix.cursor = ix.clock.Now().UnixMilli()
	if views != nil {
		var opts []kvstore.Option
		if ix.quarantine != nil {
			opts = append(opts, kvstore.WithRecorder(ix.quarantine))
		}
		ix.bucket = kvstore.Bind(nil, views, viewsSpec, append(opts, kvstore.WithLogger(ix.logger))...)
	}
	return ix, nil
}

// Ready returns a channel closed once Run has loaded every view the
// bucket held when it started.
func (ix *Index) Ready() <-chan struct{} { return ix.ready }

// Len returns the number of records in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.byID.n
}

// slotOf returns the slot of the record of packed id p. byID holds a 32-bit hash of each
// id with its slot, 8 bytes a record where a map of the ids took about
// 30; the ids of equal hash are told apart by the entries. The caller
// holds the lock.
func (ix *Index) slotOf(p string) (slot uint32, ok bool) {
	h := hash32(p)
	ix.byID.from(h<<32, func(k uint64) bool {
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

// put adds or replaces the record of v. A view older than the one held is
// ignored. The caller holds the write lock.
func (ix *Index) put(v *View) { ix.putAt(v, false) }

// putAt is put that marks the record as delivered by the current watch
// and, with force, takes v even if it is older than the one held (the
// bucket's value replayed by a restarted watch is the truth). The caller
// holds the write lock.
func (ix *Index) putAt(v *View, force bool) {
	ix.putEntry(newEntry(v, ix.names), func() string { return v.State.Error.ErrorMsg }, force)
}

// putFields is putAt for a view read by decodeViewFields. The caller holds
// the write lock.
func (ix *Index) putFields(f *viewFields, force bool) {
	ix.putEntry(entryOf(f, ix.names), func() string { return string(f.errorMsg) }, force)
}

// putEntry is putAt for the entry of a view; msg returns its error
// message. The caller holds the write lock.
func (ix *Index) putEntry(n entry, msg func() string, force bool) {
	n.gen = ix.gen
	if ix.loading != nil {
		ix.loadPut(n, msg, force)
		return
	}
	slot, ok := ix.slotOf(n.id)
	if ok {
		old := ix.slots.at(slot)
		old.gen = ix.gen
		if old.version > n.version && !force {
			return
		}
		ix.unorder(old, slot)
		n.id = old.id // keep the bytes already held
		*old = n
	} else {
		slot = ix.slots.add(n)
		ix.byID.insert(lookupKey(n.id, slot))
	}
	e := ix.slots.at(slot)
	ix.order(e, slot)
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
	ix.byID.remove(lookupKey(p, slot))
	ix.slots.free(slot)
}

// order adds e to the sort orders, to the due order if it can become
// due, and to the counts.
func (ix *Index) order(e *entry, slot uint32) {
	ix.track(e, slot)
	tie := tieOf(e.id)
	for f := range ix.orders {
		ix.orders[f].insert(pos{sortField(f).key(e), tie, slot})
	}
	if e.dueCandidate() {
		ix.due.insert(pos{e.nextRetryAt, tie, slot})
	}
}

func (ix *Index) unorder(e *entry, slot uint32) {
	ix.untrack(e, slot)
	tie := tieOf(e.id)
	for f := range ix.orders {
		ix.orders[f].remove(pos{sortField(f).key(e), tie, slot})
	}
	if e.dueCandidate() {
		ix.due.remove(pos{e.nextRetryAt, tie, slot})
	}
}

// Put adds or replaces the record of v in the index, as the bucket watch
// does; a view older than the one held is ignored. It lets tools and
// benchmarks fill an index that has no bucket (NewIndex(nil, nil)). Safe
// for concurrent use.
func (ix *Index) Put(v View) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.put(&v)
}
