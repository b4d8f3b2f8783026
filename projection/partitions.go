package projection

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/partition"
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
// When src's partitions change, the watch is started again and loads the
// records of the new ones; Partitions says which partitions the index
// holds in full, and none from a change until the new load ends. It
// cannot be combined with
// WithSnapshots yet: a snapshot holds another instance's partitions once
// they move. The records of the other partitions are still read from the
// bucket (the views are keyed by record, not by partition), only not
// kept.
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
// the channel that signals their change (nil without partitions).
func (ix *Index) beginPartitions() <-chan struct{} {
	if ix.partitions == nil {
		return nil
	}
	ix.disclaim()
	changed := ix.partitions.Changed() // before Held: a change in between is seen
	set := partition.NewSet(ix.partitions.Held())
	ix.mu.Lock()
	ix.loading = &set
	ix.unplaced = map[string]uint64{}
	ix.placed = map[string]bool{}
	ix.mu.Unlock()
	return changed
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
	if ix.placed[processor] {
		return
	}
	if ix.partitions.Places(processor) {
		ix.placed[processor] = true // asked once a load: a placed processor stays placed
		return
	}
	if _, ok := ix.unplaced[processor]; ok || len(ix.unplaced) < maxUnplaced {
		ix.unplaced[processor]++
	}
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
	return held, maps.Clone(ix.unplaced)
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
	return slices.Sorted(maps.Keys(ix.unplaced))
}
