package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/projection/index"
)

// batchSize bounds how many bucket updates are applied under one lock.
const batchSize = 1024

// The backoff between restarts of the watch: doubled after each watch that
// failed before it delivered the bucket's values, up to the cap.
const (
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 10 * time.Second
)

var (
	errNotLoaded = fmt.Errorf("the index has not loaded the views bucket yet: %w", ErrNotCurrent)
	errWatchEnd  = errors.New("the watch ended (subscription closed)")
	errRecreated = errors.New("the views bucket was deleted and created again")
	errStopped   = fmt.Errorf("the index has stopped watching the views bucket: %w", ErrNotCurrent)
)

// Run loads every view of the bucket into the index, closes Ready, and
// keeps the index current by watching the bucket until ctx ends; then it
// stops the watch and returns nil once it has stopped.
//
// A watch that cannot start, or stops on its own while ctx is live (the
// connection closed, the bucket's stream was lost, or the bucket was
// deleted and created again, which the index checks every 30s, see
// WithBucketCheck), is logged and started again after a capped backoff
// (100ms doubling to 10s); meanwhile the index keeps answering from what
// it holds and Healthy reports why it may be stale. A restarted watch
// replays the bucket: the index then holds exactly what a fresh load
// would (records the bucket no longer has are dropped, no record is
// counted twice). The only error is for an index without a bucket
// (NewIndex(nil, ...)). A value that is not a view is skipped and counted
// (Corrupt). Call Run once per Index.
func (ix *Index) Run(ctx context.Context) error {
	if ix.views == nil {
		return fmt.Errorf("index: no views bucket to watch (NewIndex was given nil): %w", ErrInvalidOption)
	}
	defer ix.setHealth(errStopped)
	ix.began = time.Now()
	rctx, stopRepair := context.WithCancel(ctx)
	repaired := make(chan struct{})
	go func() { defer close(repaired); ix.repairLoop(rctx) }()
	defer func() { stopRepair(); <-repaired }()
	if ix.auditRate > 0 {
		actx, stopAudit := context.WithCancel(ctx)
		audited := make(chan struct{})
		go func() { defer close(audited); ix.auditLoop(actx) }()
		defer func() { stopAudit(); <-audited }()
	}
	if ix.snapshots != nil {
		sctx, stopSaver := context.WithCancel(ctx)
		saver := make(chan struct{})
		go func() { defer close(saver); ix.snapshotLoop(sctx) }()
		// Once the watch has stopped: the index holds what it held at its
		// last revision.
		defer func() { stopSaver(); <-saver; ix.finalSave(ctx) }()
	}
	backoff := watchBackoffMin
	moved := false
	for attempt := 1; ; attempt++ {
		synced, err := ix.watch(ctx, moved)
		if ctx.Err() != nil {
			return nil
		}
		if moved = errors.Is(err, errPartitionsMoved); moved {
			ix.setHealth(fmt.Errorf("loading the partitions this instance now holds: %w", ErrNotCurrent))
			ix.logger.Info("index: the partitions this instance holds changed; loading them")
			attempt = 0
			continue
		}
		if synced {
			backoff, attempt = watchBackoffMin, 1
		}
		ix.setHealth(fmt.Errorf("the watch of the views bucket stopped (%v); restarting it (attempt %d), answers may be stale meanwhile: %w",
			err, attempt, ErrNotCurrent))
		ix.logger.Warn("index: the watch of the views bucket stopped; restarting it", "err", err, "attempt", attempt, "backoff", backoff)
		if wait.Sleep(ctx, backoff) != nil {
			return nil
		}
		backoff = min(2*backoff, watchBackoffMax)
	}
}

// watch runs one watch of the bucket until ctx ends or the watch ends. It
// reports whether the watch delivered the bucket's initial values, and why
// it ended. moved: the last watch ended because the partitions changed
// (see reload).
func (ix *Index) watch(ctx context.Context, moved bool) (synced bool, err error) {
	info, err := ix.bucketInfo(ctx)
	if err != nil {
		return false, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := ix.beginPartitions(moved)
	gen, after := ix.beginWatch(ctx, info)
	// The whole history (one revision per key) read up to the stream's last
	// sequence before the index counts as loaded: the watch's own end
	// signal comes early while views are written, and a restarted watch's
	// sweep would then drop the records being written (see kvwatch).
	opts := []jetstream.WatchOpt{jetstream.IncludeHistory()}
	if after > 0 {
		opts = append(opts, jetstream.ResumeFromRevision(after+1))
	}
	w, filters, err := ix.startLoad(wctx, info, opts)
	if err != nil {
		ix.Index.Update(func(b *index.Batch) { b.EndLoad(false) }) // cut short: nothing is dropped
		return false, fmt.Errorf("start the watch: %w", err)
	}
	defer func() { stopWatch(w) }()
	if err := ix.loadInitial(ctx, wctx, w, filters, gen, after); err != nil {
		return false, err
	}
	if filters == nil && ix.partitions != nil {
		// The load read every key; the watch follows the partitions' alone.
		stopWatch(w)
		if w, err = ix.followFiltered(wctx, ix.watchFilters()); err != nil {
			return false, err // the next watch loads again, after a backoff
		}
	}
	ix.setHealth(nil)
	return true, ix.followUpdates(ctx, w.Updates(), gen, infoCreated(info), changed)
}

// startLoad starts the watch that loads the index (info: its bucket's
// stream, nil if unknown), and returns its key patterns: with
// WithPartitions and a bucket of more than ix.loadKeys keys
// (filteredLoadKeys), those of the partitions (watchFilters), else nil:
// every key.
func (ix *Index) startLoad(ctx context.Context, info *jetstream.StreamInfo, opts []jetstream.WatchOpt) (jetstream.KeyWatcher, []string, error) {
	filters := ix.watchFilters()
	if filters == nil || info == nil || info.State.NumSubjects <= ix.loadKeys {
		w, err := ix.views.WatchAll(ctx, opts...)
		return w, nil, err
	}
	// A copy: the client rewrites the keys it is given into subjects.
	w, err := ix.views.WatchFiltered(ctx, slices.Clone(filters), opts...)
	return w, filters, err
}

// filteredLoadKeys is the number of keys in the views bucket above which
// an index of some partitions loads them through a watch of their keys
// alone; at or below it, it reads every key and keeps its partitions'.
// JetStream (2.15) keeps where each subject's messages lie while a stream
// has at most a million subjects, and a filtered read looks that up for
// every subject it matches each time it leaves a block: where the
// partitions' keys are interleaved in the stream, as they are, a
// filtered read of a third of 300 000 views took 8 to 10 times a read of
// that third alone, a read of every view 3.2 to 3.8 times. Past a million
// subjects it scans the blocks instead: the filtered read of a third of
// 1.2 million views took 1.8 to 2.3 times the third alone, the read of
// every view 3.2 to 4.4 times (BenchmarkPartitionedIndex,
// docs/scaling.md).
const filteredLoadKeys = 1_000_000

// followFiltered starts the watch that follows the changes of the
// partitions' keys (filters) after a load that read every key. It starts
// at the revision after the last one the load applied, near the stream's
// end, where a filtered watch costs what it delivers.
func (ix *Index) followFiltered(ctx context.Context, filters []string) (jetstream.KeyWatcher, error) {
	ix.mu.Lock()
	from := ix.rev + 1
	ix.mu.Unlock()
	// A copy: the client rewrites the keys it is given into subjects.
	w, err := ix.views.WatchFiltered(ctx, slices.Clone(filters), jetstream.IncludeHistory(), jetstream.ResumeFromRevision(from))
	if err != nil {
		return nil, fmt.Errorf("start the watch of this instance's partitions from revision %d: %w", from, err)
	}
	return w, nil
}

// stopWatch stops w, whose callback may be blocked on a full channel: it
// drains the channel so that the subscription can close.
func stopWatch(w jetstream.KeyWatcher) {
	if w == nil {
		return
	}
	updates := w.Updates()
	_ = w.Stop()
	go func() {
		for range updates {
		}
	}()
}

// watchFilters returns the key patterns the watch follows after its
// load: with WithPartitions, those of the partitions it loads (KeyFilters)
// and every processor's key (processorKeys), so that it reads no view of
// another instance's partitions and still learns of processors no one
// holds; nil (every key) without.
func (ix *Index) watchFilters() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.loading == nil {
		return nil
	}
	return append([]string{processorKeys}, KeyFilters(ix.loading.IDs())...)
}

// beginWatch starts watch number gen: the index is told a load begins
// (its values replace what it kept, except in a reload after a change of
// partitions, which drops the records of the partitions no longer held
// and keeps the others), and restored from the newest snapshot on the
// first watch; after is the revision the watch resumes after (0: from the
// start).
func (ix *Index) beginWatch(ctx context.Context, info *jetstream.StreamInfo) (gen uint32, after uint64) {
	ix.mu.Lock()
	ix.gen++
	gen = ix.gen
	ix.synced, ix.rev, ix.origin = false, 0, infoCreated(info).UnixNano()
	r, held := ix.reload, ix.loading
	ix.mu.Unlock()
	if r != nil {
		ix.dropMoved(held)
		if ix.snapshots != nil {
			ix.restorePartitions(ctx, r, held, info)
		}
		ix.readUnrestored(ctx, r, held, info, gen)
		after = r.resume(held)
		ix.mu.Lock()
		ix.rev = after
		ix.mu.Unlock()
		return gen, after
	}
	// A restarted watch replays the bucket's current values: they replace
	// what the index kept from before. So do the changes after a snapshot
	// (snapshot.go).
	ix.Index.Update(func(b *index.Batch) { b.BeginLoad(gen > 1 || ix.snapshots != nil) })
	if gen == 1 && ix.snapshots != nil {
		after = ix.restore(ctx, info)
	}
	ix.mu.Lock()
	ix.rev = after
	ix.mu.Unlock()
	return gen, after
}

// loadInitial applies the watch's initial values (after revision after)
// and ends the load; a load cut short drops nothing. filters are the
// watch's key patterns (nil: every key).
func (ix *Index) loadInitial(ctx, wctx context.Context, w jetstream.KeyWatcher, filters []string, gen uint32, after uint64) error {
	b := ix.batcher(gen)
	var err error
	if filters == nil {
		err = kvwatch.InitialAllAfter(wctx, ix.views, w, after, b.add)
	} else {
		err = kvwatch.InitialFilteredAfter(wctx, ix.views.js, ix.views, filters, w, after, b.add)
	}
	if err != nil {
		ix.Index.Update(func(b *index.Batch) { b.EndLoad(false) }) // cut short: nothing is dropped
		return fmt.Errorf("load the views: %w", err)
	}
	if after > 0 && !ix.reloading() {
		b.flush()
		if err := ix.checkRestored(ctx); err != nil {
			ix.Index.Update(func(b *index.Batch) { b.EndLoad(false) }) // the restarted watch replaces it all
			return err
		}
	}
	b.add(nil) // nil: every view is in
	b.flush()
	return nil
}

// batcher applies a watch's entries to the index batchSize at a time.
type batcher struct {
	ix    *Index
	gen   uint32
	batch []jetstream.KeyValueEntry
}

func (ix *Index) batcher(gen uint32) *batcher {
	return &batcher{ix: ix, gen: gen, batch: make([]jetstream.KeyValueEntry, 0, batchSize)}
}

// add keeps e, and applies the batch once it is full.
func (b *batcher) add(e jetstream.KeyValueEntry) {
	if b.batch = append(b.batch, e); len(b.batch) == batchSize {
		b.flush()
	}
}

// flush applies what is kept, if anything.
func (b *batcher) flush() {
	if len(b.batch) == 0 {
		return
	}
	b.ix.applyBatch(b.batch, b.gen)
	b.batch = b.batch[:0]
}

// followUpdates applies the watch's updates in batches until ctx ends,
// the watch ends or the bucket is gone or recreated. The index's now
// follows the clock while nobody asks, so that a query after a quiet
// spell does not move every record at once.
// A change of the partitions (moved, nil without partitions) ends it too.
func (ix *Index) followUpdates(ctx context.Context, updates <-chan jetstream.KeyValueEntry, gen uint32, created time.Time, moved <-chan struct{}) error {
	check := time.NewTicker(ix.checkEvery)
	defer check.Stop()
	follow := time.NewTicker(followEvery)
	defer follow.Stop()
	batch := make([]jetstream.KeyValueEntry, 0, batchSize)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
			ix.disclaim() // at once, before the next watch reads the new partitions
			return errPartitionsMoved
		case <-follow.C:
			ix.Index.Advance(ix.clock.Now())
			continue
		case <-check.C:
			if err := ix.checkBucket(ctx, created); err != nil {
				return err
			}
			continue
		case e, ok := <-updates:
			if !ok {
				return errWatchEnd
			}
			if e == nil {
				continue // the watch's own end-of-initial-values signal
			}
			batch = append(batch, e)
		}
		if ix.applyBatch(takeWaiting(updates, batch), gen) {
			ix.setHealth(nil)
		}
	}
}

// takeWaiting appends to batch the updates already waiting, up to
// batchSize.
func takeWaiting(updates <-chan jetstream.KeyValueEntry, batch []jetstream.KeyValueEntry) []jetstream.KeyValueEntry {
	for len(batch) < batchSize {
		select {
		case e, ok := <-updates:
			if !ok {
				return batch
			}
			if e != nil {
				batch = append(batch, e)
			}
		default:
			return batch
		}
	}
	return batch
}

// checkBucket returns an error when the views bucket is gone or was
// recreated since created; a check that cannot be made is logged and the
// watch goes on.
func (ix *Index) checkBucket(ctx context.Context, created time.Time) error {
	now, err := ix.bucketCreated(ctx)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
		return err
	case err != nil:
		ix.logger.Debug("index: cannot check the views bucket", "err", err) // the watch goes on
	case !now.Equal(created):
		return errRecreated
	}
	return nil
}

// bucketCreated returns when the bucket's stream was created, or the zero
// time for a bucket that does not tell. A bucket that is gone is an error.
func (ix *Index) bucketCreated(ctx context.Context) (time.Time, error) {
	info, err := ix.bucketInfo(ctx)
	return infoCreated(info), err
}

// bucketInfo returns the info of the bucket's stream, nil for a bucket
// that does not tell. A bucket that is gone is an error.
func (ix *Index) bucketInfo(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	st, err := ix.views.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the status of the views bucket: %w", err)
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return bs.StreamInfo(), nil
	}
	return nil, nil
}

// infoCreated is when info's stream was created, the zero time without
// info.
func infoCreated(info *jetstream.StreamInfo) time.Time {
	if info == nil {
		return time.Time{}
	}
	return info.Created
}

// followEvery is how often the watch moves the index's now to the clock's.
const followEvery = time.Second

// bucketCheckTimeout bounds one status request of the bucket check.
const bucketCheckTimeout = 10 * time.Second
