package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
)

// removable is the optional part of a RecordStore that says whether its
// stream allows removal; *jsstore.Store has it.
type removable interface {
	Removable(ctx context.Context, context string) (bool, error)
}

// class is one kind of finished record and its retention.
type class struct {
	filter        api.Filter
	unrecoverable bool
	cutoff        int64 // epoch ms: executeAt strictly before it
}

// classOf returns the class of a removal (unrecoverable or succeeded) as
// the retention is now; ok is false when that class is no longer removed.
func (sw *Sweeper) classOf(unrecoverable bool) (class, bool) {
	for _, c := range sw.classes() {
		if c.unrecoverable == unrecoverable {
			return c, true
		}
	}
	return class{}, false
}

// removes reports whether the record state s is finished in class c and
// old enough to be removed: the one rule, applied when a record is
// selected and again, from the event store, before it is removed.
func (c class) removes(s aggregate.State) bool {
	finished := s.Status == aggregate.StatusSucceeded
	if c.unrecoverable {
		finished = s.Status == aggregate.StatusFailed && s.Recoverable == aggregate.Unrecoverable
	}
	return finished && s.ExecuteAt < c.cutoff
}

func (sw *Sweeper) classes() []class {
	now := sw.cfg.Clock.Now()
	var out []class
	if d := sw.cfg.Succeeded; d > 0 {
		at := now.Add(-d)
		out = append(out, class{filter: api.Filter{Status: aggregate.StatusSucceeded, ExecuteAtTo: at}, cutoff: at.UnixMilli()})
	}
	if d := sw.cfg.Unrecoverable; d > 0 {
		at := now.Add(-d)
		out = append(out, class{filter: api.Filter{Status: aggregate.StatusFailed, Recoverable: aggregate.Unrecoverable, ExecuteAtTo: at},
			unrecoverable: true, cutoff: at.UnixMilli()})
	}
	return out
}

// select_ lists the oldest finished records past their retention, checks
// each against its last stream in the store, and returns batch n of them
// (nil if there are none). It scans at most a few pages past records it
// leaves out, so records it cannot remove never stall the ones behind.
func (sw *Sweeper) select_(ctx context.Context, n uint64) (*SweepBatch, error) {
	if r, ok := sw.cfg.Store.(removable); ok {
		yes, err := r.Removable(ctx, aggregate.Context)
		if err != nil {
			return nil, fmt.Errorf("check the compensation stream: %w", err)
		}
		if !yes {
			return nil, fmt.Errorf("retention is on but the compensation stream denies purges (it was created before retention existed; docs/retention.md says how to migrate it): %w", jsstore.ErrRemovalDenied)
		}
	}
	b := &SweepBatch{N: n, StartedAt: sw.cfg.Clock.Now().UnixMilli()}
	for _, c := range sw.classes() {
		q := api.Query{Filter: c.filter, Sort: api.Sort{Field: api.SortExecuteAt}}
		for scanned := 0; len(b.Records) < sw.cfg.Batch && scanned < 4*sw.cfg.Batch; {
			q.Limit = min(sw.cfg.Batch-len(b.Records), api.MaxLimit)
			page, err := sw.cfg.Records.List(q)
			if err != nil {
				return nil, fmt.Errorf("list finished records: %w", err)
			}
			for _, it := range page.Items {
				rec, ok, err := sw.candidate(ctx, it.ID, c)
				if err != nil {
					return nil, err
				}
				if ok {
					b.Records = append(b.Records, rec)
				}
			}
			scanned += len(page.Items)
			if page.Next == "" || len(page.Items) == 0 {
				break
			}
			q.Cursor = page.Next
		}
	}
	if len(b.Records) == 0 {
		return nil, nil
	}
	return b, nil
}

// candidate checks record id against its last stream: still finished in
// class c and old enough. ok is false for a record to leave alone.
func (sw *Sweeper) candidate(ctx context.Context, id string, c class) (Removal, bool, error) {
	st, err := sw.cfg.Store.LoadLast(ctx, aggregate.RecordAggregate(id))
	return sw.judgeLast(ctx, id, c, st, err)
}

// judgeLast is candidate on what reading record id's last stream gave: st,
// or err.
func (sw *Sweeper) judgeLast(ctx context.Context, id string, c class, st eventstore.Stream, err error) (Removal, bool, error) {
	if errors.Is(err, eventstore.ErrNotFound) {
		// A view of no history: the reprojector deletes it.
		if r := sw.cfg.Reprojector; r != nil {
			if err := r.Reproject(ctx, id); err != nil {
				sw.cfg.Logger.Warn("retention: a listed record has no history and its view could not be repaired", "record", id, "err", err)
			}
		}
		return Removal{}, false, nil
	}
	if errors.Is(err, eventstore.ErrCorrupt) {
		sw.cfg.Logger.Warn("retention: a record's last stream does not read; it is kept", "record", id, "err", err)
		return Removal{}, false, nil
	}
	if err != nil {
		return Removal{}, false, fmt.Errorf("read record %s: %w", id, err)
	}
	s, ok := aggregate.CarriedState(st)
	if !ok {
		sw.cfg.Logger.Debug("retention: a record's last stream carries no state; it is kept", "record", id)
		return Removal{}, false, nil
	}
	if !c.removes(s) {
		return Removal{}, false, nil // the index lags; a later pass sees it again
	}
	rec := Removal{ID: id, Through: st.Seq, Version: st.Version, Function: s.Function, ErrorCode: s.Error.ErrorCode, Fingerprint: s.Error.Fingerprint,
		Status: s.Status, Unrecoverable: c.unrecoverable, ExecuteAt: s.ExecuteAt}
	if err := checkRemoval("record", &rec, sw.cfg.Clock.Now().Add(retentionSkew).UnixMilli()); err != nil {
		sw.cfg.Logger.Warn("retention: a record cannot be tallied; it is kept", "record", id, "err", err)
		return Removal{}, false, nil
	}
	return rec, true, nil
}

// archive writes the histories of b's records to the archive, if there is
// one, and names its manifest in b. A record whose history moved on since
// it was selected, or does not read, is dropped from the batch.
func (sw *Sweeper) archive(ctx context.Context, b *SweepBatch) error {
	return sw.archiveBatch(ctx, b, true)
}

// archiveBatch is archive; without drop, the records it cannot archive
// (already removed) stay in the batch.
func (sw *Sweeper) archiveBatch(ctx context.Context, b *SweepBatch, drop bool) error {
	sink := sw.cfg.Archive
	if sink == nil {
		return nil
	}
	var keep []Removal
	var recs []archive.Record
	for _, rec := range b.Records {
		hist, err := sw.cfg.Store.Load(ctx, aggregate.RecordAggregate(rec.ID), 1)
		switch {
		case errors.Is(err, eventstore.ErrNotFound), errors.Is(err, eventstore.ErrCorrupt):
			sw.cfg.Logger.Warn("retention: a record's history does not read; it is kept", "record", rec.ID, "err", err)
			sw.stats.dropped.Add(1)
			continue
		case err != nil:
			return fmt.Errorf("read the history of record %s: %w", rec.ID, err)
		}
		if len(hist) == 0 || hist[len(hist)-1].Seq != rec.Through {
			sw.stats.dropped.Add(1)
			continue // it moved on
		}
		keep = append(keep, rec)
		recs = append(recs, archive.Record{ID: rec.ID, Function: rec.Function, Streams: hist})
	}
	if drop {
		b.Records = keep
	}
	if len(recs) == 0 {
		return nil
	}
	m, err := archive.WriteSweep(ctx, sink, b.N, sw.cfg.Clock.Now(), recs)
	if err != nil {
		return fmt.Errorf("archive sweep batch %d to %s (nothing is removed): %w", b.N, sink, err)
	}
	b.Archive, b.Manifest = sink.String(), archive.ManifestName(m.Sweep)
	return nil
}

// finish does what is left of the pending batch of st (at revision rev):
// count its records in the tallies, purge their histories, delete their
// views, and record the batch as done.
func (sw *Sweeper) finish(ctx context.Context, st SweepState, rev uint64) (Report, error) {
	b := st.Pending
	rep := Report{Batch: b.N, Archive: b.Archive, Manifest: b.Manifest}
	rev, err := sw.ensureArchived(ctx, st, rev)
	if err != nil {
		return rep, err
	}
	checked := false
	if !b.Tallied {
		if rev, err = sw.recheckAndTally(ctx, st, rev, &rep); err != nil {
			return rep, err
		}
		checked = true
	}
	for _, rec := range b.Records {
		if err := sw.remove(ctx, b.N, rec, checked, &rep); err != nil {
			return rep, err
		}
	}
	now := sw.cfg.Clock.Now()
	rep.At = now.UnixMilli()
	st.Batch, st.Pending = b.N, nil
	sw.used = max(sw.used, b.N)
	st.Removed += int64(rep.Removed())
	st.Messages += int64(rep.Messages)
	if b.Manifest != "" {
		st.Archived += int64(rep.Removed())
	}
	st.Last = &rep
	if _, err := sw.cfg.Progress.putState(ctx, st, rev, now); err != nil {
		return rep, fmt.Errorf("record sweep batch %d as done: %w", b.N, err)
	}
	sw.done(ctx, rep)
	return rep, nil
}

// ensureArchived checks that the archive of st's pending batch can still
// be read, or archives the batch when archiving was turned on while it
// was pending; it returns the revision of the stored state.
func (sw *Sweeper) ensureArchived(ctx context.Context, st SweepState, rev uint64) (uint64, error) {
	b := st.Pending
	if sw.cfg.Archive == nil {
		return rev, nil
	}
	if b.Manifest != "" && b.Archive == sw.cfg.Archive.String() {
		// The archive must still hold what the batch removes (one
		// elsewhere was read back when it was written).
		if _, err := archive.ReadManifest(ctx, sw.cfg.Archive, b.N); err != nil {
			return rev, fmt.Errorf("sweep batch %d: its archive %s %s cannot be read, so nothing more of it is removed: %w", b.N, b.Archive, b.Manifest, err)
		}
	}
	if b.Manifest != "" || len(b.Records) == 0 {
		return rev, nil
	}
	// Archiving was turned on while this batch was pending: what is still
	// there is archived before it is removed.
	if err := sw.archiveBatch(ctx, b, false); err != nil {
		return rev, err
	}
	if b.Manifest == "" {
		return rev, nil
	}
	rev, err := sw.cfg.Progress.putState(ctx, st, rev, sw.cfg.Clock.Now())
	if err != nil {
		return rev, fmt.Errorf("record the archive of sweep batch %d: %w", b.N, err)
	}
	return rev, nil
}

// recheckAndTally keeps of st's pending batch what the event store says
// is still removable, counts it in the tallies and records the batch as
// tallied; it returns the revision of the stored state.
func (sw *Sweeper) recheckAndTally(ctx context.Context, st SweepState, rev uint64, rep *Report) (uint64, error) {
	b := st.Pending
	if err := sw.recheck(ctx, b, rep); err != nil {
		return rev, err
	}
	if err := sw.tally(ctx, b); err != nil {
		return rev, err
	}
	b.Tallied = true
	rev, err := sw.cfg.Progress.putState(ctx, st, rev, sw.cfg.Clock.Now())
	if err != nil {
		return rev, fmt.Errorf("record the tallies of sweep batch %d: %w", b.N, err)
	}
	return rev, sw.step("tallied")
}

// remove purges rec's history and retires its view, counting it in rep.
// A record of a batch tallied in an earlier pass (not checked) is checked
// against the event store first.
func (sw *Sweeper) remove(ctx context.Context, batch uint64, rec Removal, checked bool, rep *Report) error {
	if !checked {
		// A batch tallied in an earlier pass (or stored so): each
		// record is checked against the event store before its
		// history goes; one purged already has its view retired.
		ok, err := sw.purgeable(ctx, rec)
		if err != nil {
			return err
		}
		if !ok {
			rep.Dropped++
			sw.stats.dropped.Add(1)
			return nil
		}
	}
	n, err := sw.cfg.Store.Remove(ctx, aggregate.RecordAggregate(rec.ID), rec.Through)
	if err != nil {
		return fmt.Errorf("sweep batch %d: %w", batch, err)
	}
	rep.Messages += int(n)
	if err := sw.step("purged"); err != nil {
		return err
	}
	deleted, err := projection.RetireView(ctx, sw.cfg.Views, rec.ID, rec.Through)
	if err != nil {
		return fmt.Errorf("sweep batch %d: %w", batch, err)
	}
	if deleted {
		rep.Views++
	}
	if rec.Unrecoverable {
		rep.Unrecoverable++
	} else {
		rep.Succeeded++
	}
	return nil
}

// recheck keeps of b the records that the event store still says are
// finished in their class and past their retention, at the sequence
// selected, each as the store describes it: a stored batch is derived
// state (it may be stale, or forged) and never decides alone what is
// removed. The others are left alone (they failed again, or the batch
// lists what is not removable).
func (sw *Sweeper) recheck(ctx context.Context, b *SweepBatch, rep *Report) error {
	keep := b.Records[:0]
	for _, rec := range b.Records {
		st, err := sw.cfg.Store.LoadLast(ctx, aggregate.RecordAggregate(rec.ID))
		fresh, ok, err := sw.stillRemovable(ctx, rec, st, err)
		if err != nil {
			return err
		}
		if !ok {
			rep.Dropped++
			sw.stats.dropped.Add(1)
			continue
		}
		keep = append(keep, fresh)
	}
	b.Records = keep
	return nil
}

// purgeable reports whether rec of a batch resumed after its tally may
// be purged: its history is gone already (purged before the pass
// stopped: its view goes too), or it is still removable.
func (sw *Sweeper) purgeable(ctx context.Context, rec Removal) (bool, error) {
	st, err := sw.cfg.Store.LoadLast(ctx, aggregate.RecordAggregate(rec.ID))
	if errors.Is(err, eventstore.ErrNotFound) {
		return true, nil
	}
	_, ok, err := sw.stillRemovable(ctx, rec, st, err)
	return ok, err
}

// stillRemovable checks rec against the event store now, given what
// reading its last stream gave (st, or err): that stream is the one
// selected and the record is removable in rec's class.
func (sw *Sweeper) stillRemovable(ctx context.Context, rec Removal, st eventstore.Stream, err error) (Removal, bool, error) {
	c, ok := sw.classOf(rec.Unrecoverable)
	if !ok {
		return Removal{}, false, nil // that class is no longer removed
	}
	fresh, ok, err := sw.judgeLast(ctx, rec.ID, c, st, err)
	if err != nil || !ok {
		return Removal{}, false, err
	}
	if fresh.Through != rec.Through {
		return Removal{}, false, nil // it moved on since it was selected
	}
	return fresh, true, nil
}

// tally counts b's records in the tallies, one compare-and-set per key.
func (sw *Sweeper) tally(ctx context.Context, b *SweepBatch) error {
	groups := map[string][]Removal{}
	var keys []string
	for _, rec := range b.Records {
		k := tallyKey(rec.Function, rec.ErrorCode, rec.Fingerprint)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], rec)
	}
	for _, k := range keys {
		if err := sw.cfg.Progress.count(ctx, b.N, groups[k], sw.cfg.Clock.Now()); err != nil {
			return fmt.Errorf("tally sweep batch %d: %w", b.N, err)
		}
	}
	return nil
}

// done counts, logs and audits a finished batch.
func (sw *Sweeper) done(ctx context.Context, rep Report) {
	s := &sw.stats
	s.batches.Add(1)
	s.succeeded.Add(uint64(rep.Succeeded))
	s.unrecoverable.Add(uint64(rep.Unrecoverable))
	s.messages.Add(uint64(rep.Messages))
	s.views.Add(uint64(rep.Views))
	if rep.Manifest != "" {
		s.archived.Add(uint64(rep.Removed()))
	}
	s.lastAt.Store(rep.At)
	var why strings.Builder
	fmt.Fprintf(&why, "sweep batch %d removed %d records (%d succeeded, %d unrecoverable): %d stream messages, %d views",
		rep.Batch, rep.Removed(), rep.Succeeded, rep.Unrecoverable, rep.Messages, rep.Views)
	if rep.Dropped > 0 {
		fmt.Fprintf(&why, "; %d left alone (they failed again)", rep.Dropped)
	}
	if rep.Manifest != "" {
		fmt.Fprintf(&why, "; archived in %s %s", rep.Archive, rep.Manifest)
	}
	sw.cfg.Logger.Info("retention: "+why.String(), "batch", rep.Batch, "removed", rep.Removed(), "messages", rep.Messages)
	if sw.cfg.Audit != nil {
		e := api.AuditEntry{Time: rep.At, Kind: api.AuditRetention, Actor: "scheduler", Credential: api.CredentialSystem, Reason: why.String()}
		if err := sw.cfg.Audit.Record(ctx, e); err != nil {
			sw.cfg.Logger.Warn("retention: the audit entry of a sweep was not written", "batch", rep.Batch, "err", err)
		}
	}
}
