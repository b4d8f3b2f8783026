package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
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
	for attempt := 1; ; attempt++ {
		synced, err := ix.watch(ctx)
		if ctx.Err() != nil {
			return nil
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
// it ended.
func (ix *Index) watch(ctx context.Context) (synced bool, err error) {
	info, err := ix.bucketInfo(ctx)
	if err != nil {
		return false, err
	}
	created := infoCreated(info)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ix.mu.Lock()
	ix.gen++
	gen := ix.gen
	ix.synced, ix.rev, ix.origin = false, 0, created.UnixNano()
	ix.mu.Unlock()
	// A restarted watch replays the bucket's current values: they replace
	// what the index kept from before. So do the changes after a snapshot
	// (snapshot.go).
	ix.Index.Update(func(b *index.Batch) { b.BeginLoad(gen > 1 || ix.snapshots != nil) })
	var after uint64 // the revision the watch resumes after
	if gen == 1 && ix.snapshots != nil {
		after = ix.restore(ctx, info)
	}
	ix.mu.Lock()
	ix.rev = after
	ix.mu.Unlock()
	// The whole history (one revision per key) read up to the stream's last
	// sequence before the index counts as loaded: the watch's own end
	// signal comes early while views are written, and a restarted watch's
	// sweep would then drop the records being written (see kvwatch).
	opts := []jetstream.WatchOpt{jetstream.IncludeHistory()}
	if after > 0 {
		opts = append(opts, jetstream.ResumeFromRevision(after+1))
	}
	w, err := ix.views.WatchAll(wctx, opts...)
	if err != nil {
		ix.Index.Update(func(b *index.Batch) { b.EndLoad(false) }) // cut short: nothing is dropped
		return false, fmt.Errorf("start the watch: %w", err)
	}
	updates := w.Updates()
	defer func() {
		_ = w.Stop()
		// The watch's callback may be blocked on a full channel; drain it
		// so that its subscription can close.
		go func() {
			for range updates {
			}
		}()
	}()
	batch := make([]jetstream.KeyValueEntry, 0, batchSize)
	err = kvwatch.InitialAllAfter(wctx, ix.views, w, after, func(e jetstream.KeyValueEntry) {
		if batch = append(batch, e); len(batch) == batchSize {
			ix.applyBatch(batch, gen)
			batch = batch[:0]
		}
	})
	if err != nil {
		ix.Index.Update(func(b *index.Batch) { b.EndLoad(false) }) // cut short: nothing is dropped
		return false, fmt.Errorf("load the views: %w", err)
	}
	if after > 0 {
		ix.applyBatch(batch, gen)
		batch = batch[:0]
		if err := ix.checkRestored(ctx); err != nil {
			ix.Index.Update(func(b *index.Batch) { b.EndLoad(false) }) // the restarted watch replaces it all
			return false, err
		}
	}
	ix.applyBatch(append(batch, nil), gen) // nil: every view is in
	synced = true
	ix.setHealth(nil)
	check := time.NewTicker(ix.checkEvery)
	defer check.Stop()
	// The index's now follows the clock while nobody asks, so that a query
	// after a quiet spell does not move every record at once.
	follow := time.NewTicker(followEvery)
	defer follow.Stop()
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return synced, ctx.Err()
		case <-follow.C:
			ix.Index.Advance(ix.clock.Now())
			continue
		case <-check.C:
			now, err := ix.bucketCreated(ctx)
			switch {
			case errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
				return synced, err
			case err != nil:
				ix.logger.Debug("index: cannot check the views bucket", "err", err) // the watch goes on
			case !now.Equal(created):
				return synced, errRecreated
			}
			continue
		case e, ok := <-updates:
			if !ok {
				return synced, errWatchEnd
			}
			if e == nil {
				continue // the watch's own end-of-initial-values signal
			}
			batch = append(batch, e)
		}
	more:
		for len(batch) < batchSize {
			select {
			case e, ok := <-updates:
				if !ok {
					break more
				}
				if e != nil {
					batch = append(batch, e)
				}
			default:
				break more
			}
		}
		if ix.applyBatch(batch, gen) {
			synced = true
			ix.setHealth(nil)
		}
	}
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

// change is one decoded bucket update.
type change struct {
	view    api.View
	fields  viewFields // with fast, the view as decodeViewFields read it
	fast    bool
	key     string // the bucket key
	deleted string // the id of a deleted record
	corrupt bool   // the value is not a view
	why     error  // why not
	rev     uint64 // the revision of the update
	ready   bool   // the watch has delivered every initial value
}

// applyBatch decodes updates outside the lock and applies them under it.
// gen is the watch that delivered them; applyBatch reports whether its
// initial values end in this batch.
func (ix *Index) applyBatch(batch []jetstream.KeyValueEntry, gen uint32) (ready bool) {
	changes := make([]change, 0, len(batch))
	for _, e := range batch {
		switch {
		case e == nil:
			changes = append(changes, change{ready: true})
		case e.Operation() == jetstream.KeyValuePut:
			c := change{key: e.Key(), rev: e.Revision()}
			var err error
			if c.fast = decodeViewFields(e.Value(), &c.fields); c.fast {
				err = checkFields(c.key, &c.fields)
			} else if c.view, err = decodeView(e.Value()); err == nil {
				err = checkView(c.key, &c.view)
			}
			if err != nil {
				c.corrupt, c.fast, c.why = true, false, err
			}
			changes = append(changes, c)
		default: // deleted or purged
			id, err := DecodeKey(e.Key())
			if err != nil {
				changes = append(changes, change{key: e.Key(), rev: e.Revision()}) // not a record: only forget the key
				continue
			}
			changes = append(changes, change{key: e.Key(), deleted: id, rev: e.Revision()})
		}
	}
	repair, dropped := false, 0
	var suspects []string
	ix.mu.Lock()
	ix.Index.Update(func(b *index.Batch) {
		for i := range changes {
			c := &changes[i]
			ix.rev = max(ix.rev, c.rev)
			switch {
			case c.ready:
				ix.synced = true
				if ix.start.Took == 0 {
					ix.start.Took = time.Since(ix.began)
				}
				dropped = b.EndLoad(true)
				if gen > 1 {
					ix.sweepCorrupt(gen)
				}
				ready = true
			case c.corrupt:
				// What the index held of the record stays until the view is
				// projected again.
				ix.corrupt[c.key] = corruptKey{gen: gen, rev: c.rev, why: c.why}
				repair = true
			case c.deleted != "":
				delete(ix.corrupt, c.key)
				b.Remove(c.deleted)
			case c.fast:
				delete(ix.corrupt, c.key)
				r := c.fields.record()
				if ix.auditRate > 0 && !b.Loading() && odd(b, string(r.ID), r.Version, aggregate.Status(r.Status)) {
					suspects = append(suspects, string(r.ID))
				}
				b.PutFields(&r)
			case c.view.State.ID != "":
				delete(ix.corrupt, c.key)
				if ix.auditRate > 0 && !b.Loading() && odd(b, c.view.State.ID, c.view.Version, c.view.State.Status) {
					suspects = append(suspects, c.view.State.ID)
				}
				b.Put(&c.view)
			default:
				delete(ix.corrupt, c.key)
			}
		}
	})
	ix.mu.Unlock()
	if ready {
		ix.readyOnce.Do(func() { close(ix.ready) })
	}
	if dropped > 0 {
		ix.logger.Info("index: dropped records the views bucket no longer holds", "records", dropped)
	}
	if repair {
		ix.signalRepair()
	}
	for _, id := range suspects {
		ix.suspect(id)
	}
	return ready
}

// odd reports whether a view of record id at version with status, which
// the watch delivers, is one no projector writes over what b holds: the
// same version with another status, or a lower version (the audit checks
// it at once).
func odd(b *index.Batch, id string, version uint64, status aggregate.Status) bool {
	h, ok := b.Held(id)
	return ok && (version < h.Version || version == h.Version && status != h.Status)
}

// sweepCorrupt forgets the corrupt keys the watch gen did not deliver
// among its initial values. The caller holds ix.mu.
func (ix *Index) sweepCorrupt(gen uint32) {
	for k, c := range ix.corrupt {
		if c.gen != gen {
			delete(ix.corrupt, k)
		}
	}
}

// Corrupt returns how many keys of the bucket hold a value that is not a
// view, as far as the index has seen: each is skipped, and counted once
// however often a watch delivers it. Safe for concurrent use.
func (ix *Index) Corrupt() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return uint64(len(ix.corrupt))
}

// Healthy returns nil while the index is current: Run has loaded the
// bucket and its watch is running. Otherwise it returns an error matching
// ErrNotCurrent that says why: the bucket is not loaded yet, or the watch
// stopped (with its cause) and is being restarted; the index then still
// answers from the records it holds, which may be stale. A /readyz check
// can use it. Safe for concurrent use.
func (ix *Index) Healthy() error {
	if p := ix.health.Load(); p != nil {
		return *p
	}
	return nil
}

func (ix *Index) setHealth(err error) {
	if err == nil {
		ix.health.Store(nil)
		return
	}
	ix.health.Store(&err)
}
