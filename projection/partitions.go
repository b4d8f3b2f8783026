package projection

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/index"
)

// PartitionSource says which partitions (package partition) this
// instance holds. *scheduler.Partitions satisfies it.
type PartitionSource interface {
	// Held returns the partitions held now.
	Held() []string
	// Changed returns a channel closed at the next change of Held.
	Changed() <-chan struct{}
	// Places reports whether any instance's partitions hold processor's
	// records: the index counts the records of the processors no one
	// holds (Sizes), so that they are placed.
	Places(processor string) bool
}

// WithPartitions makes the index hold only the records of the partitions
// src holds (issue #42): each view the watch delivers is kept if one of
// them holds it (partition.Holds, by the view's processor and record id),
// and a view that moves out of them (its function changed) is dropped.
// When src's partitions change, the watch is started again: it drops the
// records of the partitions no longer held and reads those of the new
// ones (reload); Partitions says which partitions the index holds in
// full, and none from a change until the new load ends. With
// WithSnapshots, it saves a snapshot per partition and starts each new
// partition from its snapshot (partsnap.go). A load reads every key of a
// bucket of up to a million keys (skipping, undecoded, the views of other
// partitions) and only its partitions' keys (KeyFilters) of a larger one,
// whichever JetStream delivers faster; then the watch follows only its
// partitions' keys and every processor's key, from which it learns of
// the processors no partition holds yet (Unplaced).
func WithPartitions(src PartitionSource) IndexOption {
	return func(ix *Index) error {
		if src == nil {
			return fmt.Errorf("partition source is nil: %w", ErrInvalidOption)
		}
		ix.partitions = src
		return nil
	}
}

// errPartitionsMoved ends a watch whose partitions changed: the next one
// loads the new partitions, at once.
var errPartitionsMoved = errors.New("the partitions this instance holds changed")

// beginPartitions fixes the partitions the next watch loads, and returns
// the channel that signals their change (nil without partitions). moved:
// the last watch ended on a change of the partitions; if its load had
// ended, the next watch reloads (see reload).
func (ix *Index) beginPartitions(moved bool) <-chan struct{} {
	if ix.partitions == nil {
		return nil
	}
	ix.disclaim()
	changed := ix.partitions.Changed() // before Held: a change in between is seen
	set := partition.NewSet(ix.partitions.Held())
	ix.mu.Lock()
	ix.reload = nil
	switch {
	case moved && ix.synced && ix.loading != nil:
		ix.reload = &reload{old: *ix.loading, through: ix.rev, began: time.Now(), restored: map[string]uint64{}}
	case ix.gen == 0 && ix.snapshots != nil: // the first load, from the partitions' snapshots
		ix.reload = &reload{old: partition.NewSet(nil), first: true, began: time.Now(), restored: map[string]uint64{}}
	}
	ix.loading = &set
	ix.unplaced = map[string]uint64{}
	ix.placed = map[string]bool{}
	ix.mu.Unlock()
	return changed
}

// reload is how a watch loads after a change of the partitions, when the
// index held the partitions old, current through revision through: it
// drops the records of the partitions it no longer holds, keeps those of
// the partitions it still holds, and reads, for each partition new to it,
// the changes after the revision its snapshot restored (restored, with
// WithSnapshots: partsnap.go; its whole history without one), and of the
// other keys only the changes after through. The first load of an index
// with snapshots is a reload from no partition (first). A reload that
// fails is followed by a load in full.
type reload struct {
	old      partition.Set
	through  uint64
	first    bool
	restored map[string]uint64 // partition → the revision of the snapshot it was restored from
	began    time.Time
	dropped  int // records of the partitions no longer held
	skipped  int // changes skipped (under Index.mu)
}

// holds reports whether the index held partition id before the reload.
func (r *reload) holds(id string) bool {
	return slices.Contains(r.old.IDs(), id)
}

// skips reports whether the reload skips a change at rev of the key of
// processor and record id, held the partitions the index now holds: one
// the index already holds (of a partition it kept, through r.through; of
// a new one, through the revision of its snapshot), or of no partition it
// holds, through r.through.
func (r *reload) skips(held *partition.Set, processor, id string, rev uint64) bool {
	p, now := held.Of(processor, id)
	if _, before := r.old.Of(processor, id); !now || before {
		return rev <= r.through
	}
	return rev <= r.restored[p]
}

// resume returns the revision the reload's watch reads after: the least
// through which the index holds one of the partitions held.
func (r *reload) resume(held *partition.Set) uint64 {
	after := uint64(math.MaxUint64)
	if !r.first {
		after = r.through
	}
	for _, id := range held.IDs() {
		if !r.holds(id) {
			after = min(after, r.restored[id])
		}
	}
	if after == math.MaxUint64 {
		return 0
	}
	return after
}

// dropMoved drops the records, and forgets the corrupt keys, of the
// partitions held no longer holds, and starts a load that replaces
// nothing: the reload's.
func (ix *Index) dropMoved(held *partition.Set) {
	out := func(processor, id string) bool {
		_, ok := held.Of(processor, id)
		return !ok
	}
	var dropped int
	ix.Index.Update(func(b *index.Batch) {
		dropped = b.RemoveIf(out)
		b.BeginLoad(false)
	})
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k := range ix.corrupt {
		if proc, id, err := ParseKey(k); err == nil && out(proc, id) {
			delete(ix.corrupt, k)
		}
	}
	if ix.reload != nil {
		ix.reload.dropped = dropped
	}
}

// reloaded logs how the reload r went. The caller holds ix.mu.
func (ix *Index) reloaded(r *reload) {
	ix.logger.Info("index: loaded the partitions this instance now holds",
		"dropped", r.dropped, "skipped", r.skipped, "took", time.Since(r.began).Round(time.Millisecond))
}

// disclaim makes Partitions claim none until the next load ends: the
// index may hold records of partitions its instance no longer holds, and
// not all of those it now holds.
func (ix *Index) disclaim() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.claimed = false
}

// maxUnplaced bounds the processors no one holds that the index counts.
const maxUnplaced = 4096

// dropped counts a view the index does not keep, of processor, if no one
// holds that processor's records. The caller holds ix.mu.
func (ix *Index) dropped(processor string) {
	if ix.placedAnywhere(processor) {
		return
	}
	if _, ok := ix.unplaced[processor]; ok || len(ix.unplaced) < maxUnplaced {
		ix.unplaced[processor]++
	}
}

// known notes processor's key: the processors with records only grow
// (their keys are never deleted), up to maxUnplaced of them. The caller
// holds ix.mu.
func (ix *Index) known(processor string) {
	if ix.processors == nil {
		ix.processors = map[string]bool{}
	}
	if len(ix.processors) < maxUnplaced {
		ix.processors[processor] = true
	}
}

// Processors returns the processors whose key (ProcessorKey) the index's
// watch has read, sorted: every processor with records as of the watch,
// those of other instances' partitions included, up to 4096. Safe for
// concurrent use.
func (ix *Index) Processors() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return slices.Sorted(maps.Keys(ix.processors))
}

// placedAnywhere reports whether any instance's partitions hold
// processor's records; asked of the source once a load, as a placed
// processor stays placed. The caller holds ix.mu.
func (ix *Index) placedAnywhere(processor string) bool {
	if ix.placed[processor] {
		return true
	}
	if ix.partitions.Places(processor) {
		ix.placed[processor] = true
		return true
	}
	return false
}

// Sizes returns the records the index holds per processor and, with
// WithPartitions, the views it read since its last load of each
// processor no one holds (about its records): what an instance reports
// for the placement of the partitions (scheduler.PartitionsConfig.Sizes).
// Safe for concurrent use.
func (ix *Index) Sizes() (held, unplaced map[string]uint64) {
	held = map[string]uint64{}
	if sum, err := ix.Summary(api.Filter{}); err == nil {
		for _, g := range sum.Groups {
			held[g.Processor] += uint64(g.Total)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return held, ix.unplacedNow()
}

// unplacedNow returns the views read of the processors no one held when
// they were read, and, with 0, the processors whose key the index read
// that the partitions do not place now: a plan that stops placing a
// processor (its holder died before another member reported it) changes
// no load, so a load's count alone would never report it again. The
// caller holds ix.mu.
func (ix *Index) unplacedNow() map[string]uint64 {
	out := maps.Clone(ix.unplaced)
	if out == nil {
		out = map[string]uint64{}
	}
	if ix.partitions == nil {
		return out
	}
	for proc := range ix.processors {
		if _, ok := out[proc]; !ok && len(out) < maxUnplaced && !ix.partitions.Places(proc) {
			out[proc] = 0
		}
	}
	return out
}

// Partitions returns the partitions whose records the index holds, all of
// them and no other, and whether it does: false without WithPartitions,
// during the first load, and from a change of the partitions until the
// load of the new ones ends, while it may hold records of partitions it
// no longer holds and only some of those it now holds. Safe for
// concurrent use.
func (ix *Index) Partitions() ([]string, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.claimed {
		return nil, false
	}
	return slices.Clone(ix.loading.IDs()), true
}

// Unplaced returns the processors the index read views of, since its last
// load began, that no partition held when it read them: those the plan
// did not place then. Safe for concurrent use.
func (ix *Index) Unplaced() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return slices.Sorted(maps.Keys(ix.unplacedNow()))
}

// reloading reports whether the current watch reloads (reload).
func (ix *Index) reloading() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.reload != nil
}
