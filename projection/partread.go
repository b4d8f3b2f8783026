package projection

import (
	"context"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/partition"
)

// readUnrestored reads, for reload r, the partitions new to the index
// that no snapshot started, through a watch of their keys alone, and
// counts each as held through the bucket's last revision before that
// watch (r.restored), so that the reload's watch starts where the
// snapshots and the partitions kept are (reload.resume), not at the
// bucket's start. Without it, one new partition without a snapshot made
// the reload read every key of every partition held again. It does so in
// a bucket of more than ix.loadKeys keys alone, where a watch of some
// keys costs what it delivers (filteredLoadKeys); in a smaller one, the
// reload's watch reads the bucket from the start. A read that fails
// leaves the partitions to that watch. bucket is the views bucket's
// stream info, taken before.
func (ix *Index) readUnrestored(ctx context.Context, r *reload, held *partition.Set, bucket *jetstream.StreamInfo, gen uint32) {
	var ids []string
	for _, id := range held.IDs() {
		if !r.holds(id) && r.restored[id] == 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || bucket == nil || bucket.State.NumSubjects <= ix.loadKeys || bucket.State.LastSeq == 0 {
		return
	}
	filters := KeyFilters(ids)
	// A copy: the client rewrites the keys it is given into subjects.
	w, err := ix.views.WatchFiltered(ctx, slices.Clone(filters))
	if err != nil {
		ix.logger.Warn("index: cannot read the partitions new to it alone; the reload reads the bucket from its start", "partitions", len(ids), "err", err)
		return
	}
	defer stopWatch(w)
	b := ix.batcher(gen)
	err = kvwatch.InitialFilteredAfter(ctx, ix.views.js, ix.views, filters, w, 0, b.add)
	b.flush() // what it read is applied either way: the reload's watch applies it again
	if err != nil {
		ix.logger.Warn("index: cannot read the partitions new to it alone; the reload reads the bucket from its start", "partitions", len(ids), "err", err)
		return
	}
	for _, id := range ids {
		r.restored[id] = bucket.State.LastSeq
	}
}
