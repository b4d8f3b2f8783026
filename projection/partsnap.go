package projection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/index"
)

// An index of some partitions with snapshots (WithPartitions and
// WithSnapshots) saves one snapshot per partition it holds, of that
// partition's records, named after the views bucket and the partition
// (partitionSnapshot). A reload (partitions.go), and the first load, which
// is a reload from no partition, starts each partition new to the index
// from its snapshot, whoever saved it:
//   - the snapshot is read into an index of its own and checked there, as
//     a whole index's is (snapshotcheck.go), on the partition's keys
//     alone; one that cannot be used is quarantined or logged, as a whole
//     index's is, and the partition is read from the bucket's start;
//   - its records join the index (index.Batch.PutFrom: a record the index
//     holds at a higher version keeps it);
//   - the watch reads from the least revision the reload needs: the
//     revision each new partition's snapshot is of (0 without one) and,
//     for the partitions still held, the one the index had applied; it
//     skips each change its partition already holds (reload.skips).

// PartitionSnapshotName is the name, in the snapshots' bucket, of the
// snapshot of partition (a partition id) of the views bucket viewsBucket.
func PartitionSnapshotName(viewsBucket, partition string) string {
	return viewsBucket + ".partition." + partition
}

// partitionSnapshot is the name of the snapshot of partition id.
func (ix *Index) partitionSnapshot(id string) string {
	return PartitionSnapshotName(ix.views.Bucket(), id)
}

// savePartitions saves a snapshot of every partition the index holds, at
// the revision it holds, if that or the partitions changed since the last
// save. It returns ErrNotCurrent while the index loads. The caller holds
// ix.saveMu.
func (ix *Index) savePartitions(ctx context.Context) (bool, error) {
	ix.mu.Lock()
	if !ix.synced || !ix.claimed {
		ix.mu.Unlock()
		return false, errNotLoaded
	}
	held := ix.loading
	rev, origin, ids := ix.rev, ix.origin, held.IDs()
	parts := strings.Join(ids, " ")
	if rev == ix.savedRev && origin == ix.savedOrigin && parts == ix.savedParts {
		ix.mu.Unlock()
		return false, nil
	}
	start := time.Now()
	number := make(map[string]int, len(ids))
	infos := make([]index.SnapshotInfo, len(ids))
	for i, id := range ids {
		number[id] = i
		infos[i] = index.SnapshotInfo{Revision: rev, Origin: origin, Taken: ix.clock.Now().UnixMilli()}
	}
	part := func(processor, recordID string) int {
		if p, ok := held.Of(processor, recordID); ok {
			return number[p]
		}
		return -1
	}
	for k, c := range ix.corrupt {
		if proc, recordID, err := ParseKey(k); err == nil {
			if i := part(proc, recordID); i >= 0 {
				infos[i].Skipped = append(infos[i].Skipped, index.SkippedKey{Key: k, Revision: c.rev, Why: c.why.Error()})
			}
		}
	}
	data, err := ix.Index.AppendSnapshots(infos, part)
	if err != nil {
		ix.mu.Unlock()
		return false, err
	}
	ix.mu.Unlock()
	encoded, size := time.Since(start), 0
	for i, id := range ids {
		if err := ix.snapshots.Save(ctx, ix.partitionSnapshot(id), data[i]); err != nil {
			return false, fmt.Errorf("partition %s: %w", id, err)
		}
		size += len(data[i])
	}
	ix.savedRev, ix.savedOrigin, ix.savedParts = rev, origin, parts
	ix.logger.Info("index: saved the snapshots of its partitions", "revision", rev, "partitions", len(ids), "bytes", size,
		"encoded", encoded, "took", time.Since(start))
	return true, nil
}

// A restore is a dozen requests (the snapshot's info and read, its check
// against the bucket): on this machine 26 ms a partition on average when
// idle (51 partitions of a 300 000-view bucket restored in 1.3 s, where
// reading the bucket took 2.3 s) and 53 ms under the kill loop's load
// (85 partitions in 4.5 s), about what reading 3 000 keys takes either
// way. So the new partitions start from their snapshots only when these
// spare more keys than 3 000 a snapshot (restoreKeys): the whole bucket in
// one of at most ix.loadKeys keys, whose reload's watch reads it from the
// start unless every new partition has a snapshot; else the records of
// the snapshots (about snapshotRecordBytes each), which readUnrestored
// would read. In the kill loop of amends bench partitions (100
// processors, most of a few hundred records), instances that restored
// every partition were served again 4.6 to 13.3 s after a kill; 5.3 to
// 7.0 s reading them (lease TTL 5 s).
const (
	restoreKeys         = 3000
	snapshotRecordBytes = 80
)

// The partitions restored at once: at most restoreWorkers (a restore is
// mostly round trips: the snapshot's read and its check against the
// bucket), whose snapshots hold at most restoreBytes together, so that a
// few large partitions are not decoded at once (a snapshot takes about 5
// times its bytes once decoded); a larger snapshot is restored alone.
const (
	restoreWorkers = 8
	restoreBytes   = 32 << 20
)

// restorePartitions starts the partitions new to reload r from their
// snapshots (see above), a few at once, into r.restored; bucket is the
// views bucket's stream info.
func (ix *Index) restorePartitions(ctx context.Context, r *reload, held *partition.Set, bucket *jetstream.StreamInfo) {
	start := time.Now()
	var fresh []string
	for _, id := range held.IDs() {
		if !r.holds(id) {
			fresh = append(fresh, id)
		}
	}
	sizes, ok := ix.restorable(ctx, fresh, bucket)
	if !ok {
		return
	}
	revs, counts := make([]uint64, len(fresh)), make([]int, len(fresh))
	var g errgroup.Group
	g.SetLimit(restoreWorkers)
	budget := semaphore.NewWeighted(restoreBytes)
	for i, id := range fresh {
		g.Go(func() error {
			size, ok := sizes[ix.partitionSnapshot(id)]
			if !ok {
				return nil // read from the bucket; counted below
			}
			weight := int64(min(max(size, 1), restoreBytes)) // 1: Load says why it cannot read it
			if budget.Acquire(ctx, weight) != nil {
				return nil // ctx ended: the load ends too
			}
			defer budget.Release(weight)
			revs[i], counts[i] = ix.restorePartition(ctx, id, held, bucket)
			return nil
		})
	}
	_ = g.Wait()
	stats, none := StartStats{}, 0
	for i, id := range fresh {
		if revs[i] == 0 {
			none++
			continue
		}
		r.restored[id] = revs[i]
		if !stats.FromSnapshot || revs[i] < stats.SnapshotRevision {
			stats.SnapshotRevision = revs[i]
		}
		stats.FromSnapshot = true
		stats.SnapshotRecords += counts[i]
	}
	if none > 0 {
		ix.logger.Info("index: partitions new to the index without a snapshot it could use; reading them from the views bucket",
			"partitions", none, "of", len(fresh))
	}
	if r.first && stats.FromSnapshot {
		stats.SnapshotLoad = time.Since(start)
		ix.mu.Lock()
		ix.start = stats
		ix.mu.Unlock()
	}
}

// restorable returns the sizes of the snapshots of the partitions fresh
// (by name), and whether starting from them pays (see restoreKeys); it
// says why not when it does not.
func (ix *Index) restorable(ctx context.Context, fresh []string, bucket *jetstream.StreamInfo) (map[string]uint64, bool) {
	if bucket == nil || len(fresh) == 0 {
		return nil, false
	}
	lctx, cancel := context.WithTimeout(ctx, snapshotCheckTime) // a list that stalls does not hold the load
	defer cancel()
	sizes, err := ix.snapshots.Sizes(lctx, ix.partitionSnapshot(""))
	if err != nil {
		ix.logger.Warn("index: cannot list the partitions' snapshots; reading the partitions from the views bucket", "err", err)
		return nil, false
	}
	var n, bytes uint64
	for _, id := range fresh {
		if size, ok := sizes[ix.partitionSnapshot(id)]; ok {
			n, bytes = n+1, bytes+size
		}
	}
	spared := bytes / snapshotRecordBytes
	if keys := bucket.State.NumSubjects; keys <= ix.loadKeys {
		spared = keys
		if n < uint64(len(fresh)) {
			spared = 0 // the reload's watch reads the bucket from the start for those without one
		}
	}
	if n > 0 && spared < n*ix.restoreKeys {
		ix.logger.Info("index: reading the partitions new to it from the views bucket: their snapshots would spare fewer keys than restoring them costs",
			"partitions", len(fresh), "snapshots", n, "keys_spared", spared)
		return nil, false
	}
	return sizes, true
}

// restorePartition puts the records of partition id's snapshot into the
// index, if it can be used, and returns its revision (0: none used) and
// how many records it put.
func (ix *Index) restorePartition(ctx context.Context, id string, held *partition.Set, bucket *jetstream.StreamInfo) (uint64, int) {
	start := time.Now()
	name := ix.partitionSnapshot(id)
	if bucket == nil {
		return 0, 0
	}
	data, err := ix.snapshots.Load(ctx, name)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		ix.logger.Debug("index: no snapshot of the partition yet; reading it from the views bucket", "partition", id)
		return 0, 0
	case errors.Is(err, ErrSnapshotTooLarge) || errors.Is(err, jetstream.ErrDigestMismatch):
		ix.discardSnapshot(ctx, name, 0, err)
		return 0, 0
	case err != nil:
		ix.logger.Warn("index: cannot read the snapshot of the partition; reading it from the views bucket", "partition", id, "err", err)
		return 0, 0
	}
	info, snap, err := ix.checkPartitionSnapshot(ctx, data, id, held, bucket)
	if err != nil {
		if errors.Is(err, errSnapshotUnchecked) {
			ix.logger.Warn("index: reading the partition from the views bucket", "partition", id, "err", err)
		} else {
			ix.discardSnapshot(ctx, name, info.Revision, err)
		}
		return 0, 0
	}
	var n int
	ix.Index.Update(func(b *index.Batch) { n, err = b.PutFrom(snap) })
	if err != nil {
		ix.logger.Warn("index: cannot add the snapshot of the partition; reading it from the views bucket", "partition", id, "err", err)
		return 0, 0
	}
	ix.mu.Lock()
	for _, k := range info.Skipped {
		ix.corrupt[k.Key] = corruptKey{gen: ix.gen, rev: k.Revision, why: errors.New(k.Why)}
	}
	ix.mu.Unlock()
	ix.logger.Info("index: loaded the snapshot of the partition; reading the changes since", "partition", id, "records", n,
		"revision", info.Revision, "taken", time.UnixMilli(info.Taken).UTC(), "took", time.Since(start))
	return info.Revision, n
}

// checkPartitionSnapshot reads data, the snapshot of partition id, into an
// index of its own and checks it against bucket and the views bucket's
// keys of the partition. It returns an error wrapping errSnapshotUnchecked
// if it could not check it, or why it cannot be used.
func (ix *Index) checkPartitionSnapshot(ctx context.Context, data []byte, id string, held *partition.Set, bucket *jetstream.StreamInfo) (index.SnapshotInfo, *index.Index, error) {
	info, err := index.ReadSnapshotInfo(data)
	if err == nil {
		err = staleFor(&info, bucket)
	}
	if err != nil {
		return info, nil, err
	}
	snap, err := index.New(index.WithClock(ix.clock))
	if err != nil {
		return info, nil, err
	}
	snap.Update(func(b *index.Batch) {
		b.BeginLoad(true)
		info, err = b.LoadSnapshot(data)
		b.EndLoad(err == nil)
	})
	if err != nil {
		return info, nil, err
	}
	of := func(processor, recordID string) bool {
		p, ok := held.Of(processor, recordID)
		return ok && p == id
	}
	if err := ix.verifySnapshot(ctx, &info, snapCheck{snap: snap, of: of, keys: KeyFilters([]string{id})}); err != nil {
		return info, nil, err
	}
	var stray bool
	snap.Update(func(b *index.Batch) {
		stray = b.RemoveIf(func(processor, recordID string) bool { return !of(processor, recordID) }) > 0
	})
	if stray {
		return info, nil, fmt.Errorf("the snapshot of partition %s holds records of other partitions", id)
	}
	return info, snap, nil
}
