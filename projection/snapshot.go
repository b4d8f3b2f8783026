package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/quarantine"
)

// An index with snapshots (WithSnapshots) writes its records out (an
// index.Index snapshot, about 80 bytes a record) with the views bucket's
// revision they are consistent with, periodically and when Run ends, and
// starts from the snapshot: it loads it, then watches the bucket from the
// next revision on, so a start-up reads the changes since the snapshot,
// deletions included, instead of every view.
//
// A snapshot that cannot be used makes the index load the bucket in full,
// as without snapshots, in the same start-up:
//   - none (the first start): logged;
//   - corrupt (it does not read: index.ErrInvalidSnapshot, a digest the
//     object store refuses, past its size bound) or of another format
//     version: quarantined (kind snapshot) and logged;
//   - stale, that is of another bucket or of a bucket that lost changes
//     since: the bucket's stream was created at another time than the
//     snapshot's (deleted and created again), ends before the snapshot's
//     revision, no longer holds the messages after it (its first sequence
//     is past the revision + 1: purged), or is empty where the snapshot
//     has records: quarantined and logged.
//
// What the check cannot see: a purge of only the bucket's older messages
// (a stream purge up to a sequence the snapshot knows, or
// PurgeDeletes removing deletion markers written since the snapshot)
// removes records without a message the watch could deliver. amends
// itself removes records with deletions the watch delivers; whoever purges
// the views bucket by hand deletes the snapshot too (Snapshots.Delete), as
// the views bucket's repair does by creating the bucket again.

// WithSnapshots makes the index keep a snapshot in s, saved every period
// (MinSnapshotEvery to MaxSnapshotEvery; DefaultSnapshotEvery is the
// usual choice) by the index's clock (WithClock) and when Run ends, and
// start from it (see above). The object is named after the views bucket,
// so instances of one bucket share it: each saves its own, consistent
// with the revision it holds, and any of them may start from the latest.
func WithSnapshots(s *Snapshots, every time.Duration) IndexOption {
	return func(ix *Index) error {
		if s == nil {
			return fmt.Errorf("snapshots is nil: %w", ErrInvalidOption)
		}
		if !bounds.Within(every, MinSnapshotEvery, MaxSnapshotEvery) {
			return fmt.Errorf("snapshot period must be between %s and %s, got %s: %w", MinSnapshotEvery, MaxSnapshotEvery, every, ErrInvalidOption)
		}
		ix.snapshots, ix.snapshotEvery = s, every
		return nil
	}
}

// StartStats says how the index's first load went.
type StartStats struct {
	// FromSnapshot: the load started from a snapshot (at
	// SnapshotRevision, holding SnapshotRecords) and read the bucket's
	// changes after it; otherwise it read the bucket in full.
	FromSnapshot     bool
	SnapshotRevision uint64
	SnapshotRecords  int
	// SnapshotLoad is the time the snapshot took to read from its bucket
	// and to decode into the index's entries, before the load read the
	// changes after it and built the index's structures: a start from a
	// snapshot cannot be faster.
	SnapshotLoad time.Duration
	// Took is the wall time from Run's start to Ready.
	Took time.Duration
}

// StartStats returns how the index's first load went; the zero value
// until Ready. Safe for concurrent use.
func (ix *Index) StartStats() StartStats {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.start
}

// Start is StartStats.
//
// Deprecated: use StartStats; Start is the name of a lifecycle method
// elsewhere (processor.Processor.Start). It goes in the next release.
func (ix *Index) Start() StartStats { return ix.StartStats() }

// snapshotPoll is how often the saver looks at the clock: the period is
// of the index's clock, which tests set.
const snapshotPoll = time.Second

// finalSaveTimeout bounds the save when Run ends.
const finalSaveTimeout = time.Minute

// snapshotName is the object of the views bucket's snapshot.
func (ix *Index) snapshotName() string { return ix.views.Bucket() }

// restore starts the first watch's load from the snapshot, if one can be
// used, and returns the revision the watch resumes after (0: none, the
// load is in full). The load has begun (a replacing one: every change the
// watch delivers after the snapshot wins over it, whatever its version;
// a record deleted and created again since starts over at version 1).
// bucket is the views bucket's stream info when the watch started.
func (ix *Index) restore(ctx context.Context, bucket *jetstream.StreamInfo) (after uint64) {
	if bucket == nil {
		ix.logger.Warn("index: the views bucket does not tell its stream's state; loading it in full, without snapshots")
		return 0
	}
	start := time.Now()
	data, err := ix.snapshots.Load(ctx, ix.snapshotName())
	switch {
	case errors.Is(err, ErrNoSnapshot):
		ix.logger.Info("index: no snapshot yet; loading the views bucket in full", "snapshots", ix.snapshots.Bucket())
		return 0
	case errors.Is(err, ErrSnapshotTooLarge) || errors.Is(err, jetstream.ErrDigestMismatch):
		ix.discardSnapshot(ctx, ix.snapshotName(), 0, err)
		return 0
	case err != nil:
		ix.logger.Warn("index: cannot read the snapshot; loading the views bucket in full", "err", err)
		return 0
	}
	info, err := index.ReadSnapshotInfo(data)
	if err == nil {
		err = staleFor(&info, bucket)
	}
	if err != nil {
		ix.discardSnapshot(ctx, ix.snapshotName(), info.Revision, err)
		return 0
	}
	ix.Index.Update(func(b *index.Batch) { info, err = b.LoadSnapshot(data) })
	if err != nil {
		ix.discardSnapshot(ctx, ix.snapshotName(), info.Revision, err)
		return 0
	}
	if err := ix.verifySnapshot(ctx, &info, snapCheck{snap: ix.Index}); err != nil {
		ix.Index.Update(func(b *index.Batch) { _ = b.Unload() }) // within the load LoadSnapshot was made in
		if errors.Is(err, errSnapshotUnchecked) {
			ix.logger.Warn("index: loading the views bucket in full", "err", err)
		} else {
			ix.discardSnapshot(ctx, ix.snapshotName(), info.Revision, err)
		}
		return 0
	}
	ix.saveMu.Lock()
	ix.savedRev, ix.savedOrigin, ix.snapshotSize = info.Revision, info.Origin, len(data)+len(data)/8 // no need to save it again
	ix.saveMu.Unlock()
	ix.mu.Lock()
	ix.start = StartStats{FromSnapshot: true, SnapshotRevision: info.Revision, SnapshotRecords: info.Records, SnapshotLoad: time.Since(start)}
	for _, k := range info.Skipped {
		ix.corrupt[k.Key] = corruptKey{gen: ix.gen, rev: k.Revision, why: errors.New(k.Why)}
	}
	ix.mu.Unlock()
	ix.logger.Info("index: loaded the snapshot; reading the changes since", "records", info.Records, "revision", info.Revision,
		"bytes", len(data), "taken", time.UnixMilli(info.Taken).UTC(), "took", time.Since(start))
	return info.Revision
}

// checkRestored checks a load from a snapshot once the watch has
// delivered the changes since: every record and corrupt key the index
// holds is a key of the bucket, so they cannot outnumber the bucket's
// messages (one a key; a deletion leaves one too). More means the bucket
// lost messages the snapshot knew of without a deletion the watch could
// deliver (a purge followed by writes): the snapshot is discarded and an
// error returned, on which Run restarts the watch, which loads the bucket
// in full.
func (ix *Index) checkRestored(ctx context.Context) error {
	info, err := ix.bucketInfo(ctx)
	if err != nil || info == nil {
		return err
	}
	var held int
	ix.mu.Lock()
	ix.Index.Update(func(b *index.Batch) { held = b.Len() })
	held += len(ix.corrupt)
	rev := ix.start.SnapshotRevision
	ix.mu.Unlock()
	if uint64(held) <= info.State.Msgs {
		return nil
	}
	err = fmt.Errorf("the snapshot and the changes since hold %d keys, the views bucket only %d messages: it lost some (purged)", held, info.State.Msgs)
	ix.discardSnapshot(ctx, ix.snapshotName(), rev, err)
	ix.mu.Lock()
	ix.start = StartStats{}
	ix.mu.Unlock()
	ix.saveMu.Lock()
	ix.savedRev, ix.savedOrigin = 0, 0 // the next save replaces it, whatever the revision
	ix.saveMu.Unlock()
	return err
}

// staleFor returns why info is not a snapshot of the bucket as it is, or
// nil.
func staleFor(info *index.SnapshotInfo, bucket *jetstream.StreamInfo) error {
	st := bucket.State
	switch {
	case info.Origin != bucket.Created.UnixNano():
		return fmt.Errorf("the snapshot is of a views bucket created at %s, this one was created at %s (deleted and created again)",
			time.Unix(0, info.Origin).UTC(), bucket.Created.UTC())
	case st.LastSeq < info.Revision:
		return fmt.Errorf("the views bucket ends at revision %d, before the snapshot's %d", st.LastSeq, info.Revision)
	case st.FirstSeq > info.Revision+1:
		return fmt.Errorf("the views bucket's first revision is %d: the changes after the snapshot's %d are gone (purged)", st.FirstSeq, info.Revision)
	case st.Msgs == 0 && info.Records > 0:
		return fmt.Errorf("the views bucket is empty and the snapshot holds %d records (purged)", info.Records)
	}
	return nil
}

// discardSnapshot logs and quarantines snapshot name, which the index
// cannot use.
func (ix *Index) discardSnapshot(ctx context.Context, name string, rev uint64, why error) {
	ix.logger.Warn("index: the snapshot cannot be used; loading its records from the views bucket", "snapshots", ix.snapshots.Bucket(),
		"snapshot", name, "err", why)
	if ix.quarantine == nil {
		return
	}
	bucket := ix.snapshots.Bucket()
	e := quarantine.Entry{Kind: quarantine.KindSnapshot, Bucket: bucket, Key: name, Stream: "OBJ_" + bucket, Seq: rev,
		Subject: "$O." + bucket, Consumer: "index", Reason: quarantine.ReasonCorrupt, Error: why.Error(), At: ix.clock.Now().UnixMilli()}
	if err := ix.quarantine.Put(ctx, e); err != nil {
		ix.logger.Warn("index: cannot quarantine the snapshot", "err", err)
	}
}

// snapshotLoop saves a snapshot every period of the index's clock until
// ctx ends.
func (ix *Index) snapshotLoop(ctx context.Context) {
	last := ix.clock.Now()
	for wait.Sleep(ctx, snapshotPoll) == nil {
		if now := ix.clock.Now(); now.Sub(last) >= ix.snapshotEvery {
			if _, err := ix.SaveSnapshot(ctx); err != nil {
				if !errors.Is(err, ErrNotCurrent) { // not loaded yet: once it is
					ix.logger.Warn("index: cannot save a snapshot", "err", err)
				}
				continue // again at the next poll
			}
			last = now
		}
	}
}

// finalSave saves a snapshot once Run's watch has stopped.
func (ix *Index) finalSave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalSaveTimeout)
	defer cancel()
	if _, err := ix.SaveSnapshot(ctx); err != nil && !errors.Is(err, ErrNotCurrent) { // never loaded: nothing to save
		ix.logger.Warn("index: cannot save a snapshot at shutdown", "err", err)
	}
}

// SaveSnapshot saves a snapshot of the index now (with WithPartitions,
// one per partition it holds), if it has loaded the bucket and changed
// since the last one it saved, and reports whether it did. Encoding it holds the index's updates (not its queries) for about
// 0.1 s a million records; the upload does not. It returns ErrNotCurrent
// for an index that has not loaded the bucket, and the store's error. Run
// calls it periodically and when it ends (WithSnapshots); safe for
// concurrent use with Run and queries, one call at a time.
func (ix *Index) SaveSnapshot(ctx context.Context) (bool, error) {
	if ix.snapshots == nil {
		return false, fmt.Errorf("the index has no snapshot bucket (WithSnapshots): %w", ErrInvalidOption)
	}
	ix.saveMu.Lock()
	defer ix.saveMu.Unlock()
	if ix.partitions != nil {
		return ix.savePartitions(ctx)
	}
	ix.mu.Lock()
	if !ix.synced {
		ix.mu.Unlock()
		return false, errNotLoaded
	}
	rev, origin := ix.rev, ix.origin
	if rev == ix.savedRev && origin == ix.savedOrigin {
		ix.mu.Unlock()
		return false, nil
	}
	info := index.SnapshotInfo{Revision: rev, Origin: origin, Taken: ix.clock.Now().UnixMilli()}
	for k, c := range ix.corrupt {
		info.Skipped = append(info.Skipped, index.SkippedKey{Key: k, Revision: c.rev, Why: c.why.Error()})
	}
	start := time.Now()
	data, err := ix.Index.AppendSnapshot(make([]byte, 0, ix.snapshotSize), info)
	ix.mu.Unlock()
	if err != nil {
		return false, err
	}
	encoded := time.Since(start)
	if err := ix.snapshots.Save(ctx, ix.snapshotName(), data); err != nil {
		return false, err
	}
	ix.savedRev, ix.savedOrigin, ix.snapshotSize = rev, origin, len(data)+len(data)/8
	ix.logger.Info("index: saved a snapshot", "revision", rev, "bytes", len(data), "encoded", encoded, "took", time.Since(start))
	return true, nil
}
