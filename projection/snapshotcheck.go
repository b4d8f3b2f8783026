package projection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/projection/index"
)

// A snapshot says which revision of the views bucket its records are
// consistent with, and the index then reads only the changes after it.
// Its checksum only tells that it was not cut short: whoever can write
// the snapshot bucket can write a snapshot whose revision is later than
// its records, and the changes in between would never be read (a record
// that succeeded since would list as failed for ever, and the shutdown
// save would write it back). So the index checks a snapshot against the
// bucket before it uses it (verifySnapshot):
//
//   - the tail: the bucket keeps one revision a key, so the messages it
//     holds at or before the snapshot's revision are the keys last written
//     by then, and the snapshot must hold each as the bucket does (same
//     version and status, a deletion not held, a value that does not
//     validate listed as skipped at its revision). The last of them is
//     enough to catch a revision made later than the records: if it came
//     after the records it is missing from them. The check reads the last
//     of them, in windows of revisions that widen back from the snapshot's
//     revision until one holds a message;
//   - a sample of 8 of the snapshot's records (spread over them), each read
//     from the bucket: one last written at or before the revision must be
//     as the snapshot holds it, one not in the bucket at all is a record
//     the bucket never had.
//
// A mismatch discards the snapshot (quarantined, with the key and the
// field named) and the index loads the bucket in full; a check that
// cannot be made (the bucket does not answer) loads it in full too, and
// quarantines nothing. What a snapshot cannot tell, a view the bucket
// holds that does not match its history, the audit finds (audit.go).

// The bounds of a snapshot's check.
const (
	snapshotTailWindow  = 256  // revisions of the first tail window; each next is 16 times wider
	snapshotTailWindows = 4    // 256, 4 096, 65 536, 1 048 576 revisions
	snapshotTailMax     = 4096 // keys of a window checked at most
	snapshotSample      = 8    // records read from the bucket (a read of a key takes ms on a large bucket)
	snapshotReaders     = 4    // of them at once
	snapshotCheckTime   = 30 * time.Second
)

// errSnapshotUnchecked: the check could not be made; the snapshot is not
// known to be wrong.
var errSnapshotUnchecked = errors.New("the snapshot could not be checked against the views bucket")

// snapCheck is a snapshot being checked: the index its records were
// loaded into, nothing since applied, and, for a partition's snapshot,
// the records it is of (nil: every record of the bucket).
type snapCheck struct {
	snap *index.Index
	of   func(processor, id string) bool
	// keys, with of, are the key patterns of its records (KeyFilters).
	keys []string
}

// covers reports whether the snapshot is of key's record; a key that is
// not a record's is of none.
func (c snapCheck) covers(key string) (id string, ok bool) {
	proc, id, err := ParseKey(key)
	if err != nil {
		return "", false
	}
	return id, c.of == nil || c.of(proc, id)
}

// verifySnapshot checks the snapshot c holds against the views bucket, as
// described above, on the keys of its records alone. It returns nil, a
// *kvstore.FieldError naming the part of the snapshot that does not
// match, or an error wrapping errSnapshotUnchecked.
func (ix *Index) verifySnapshot(ctx context.Context, info *index.SnapshotInfo, c snapCheck) error {
	ctx, cancel := context.WithTimeout(ctx, snapshotCheckTime)
	defer cancel()
	skipped := make(map[string]uint64, len(info.Skipped))
	for _, k := range info.Skipped {
		skipped[k.Key] = k.Revision
	}
	if err := ix.verifyTail(ctx, info.Revision, skipped, c); err != nil {
		return err
	}
	var ids []string
	c.snap.Update(func(b *index.Batch) { ids = b.Sample(snapshotSample, uint64(ix.clock.Now().UnixNano())) })
	// Read in parallel (a read takes a few ms on a large bucket), matched
	// in order.
	last := make([]jetstream.KeyValueEntry, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	slots := make(chan struct{}, snapshotReaders)
	for i, id := range ids {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			last[i], errs[i] = ix.views.Lookup(ctx, id)
		})
	}
	wg.Wait()
	for i, id := range ids {
		switch err := errs[i]; {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return kvstore.Invalid("records", "the snapshot holds record %s, which the views bucket does not hold at all (purged since, or never written)", kvstore.Quote(id))
		case err != nil:
			return fmt.Errorf("%w: read the view of record %s: %v", errSnapshotUnchecked, id, err)
		}
		if last[i].Revision() <= info.Revision {
			if err := ix.matchSnapshot(ctx, last[i], skipped, info.Revision, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// movedBy reports whether record id's view was at another key by
// revision at (its function's processor changed): the deletion of its old
// key is then no sign of a deleted record.
func (ix *Index) movedBy(ctx context.Context, id string, at uint64) bool {
	e, err := ix.views.Lookup(ctx, id)
	return err == nil && e.Operation() == jetstream.KeyValuePut && e.Revision() <= at
}

// verifyTail checks the last keys of c's records the bucket holds at or
// before revision rev against the snapshot.
func (ix *Index) verifyTail(ctx context.Context, rev uint64, skipped map[string]uint64, c snapCheck) error {
	if last, ok := ix.lastOf(ctx, c.keys); ok && last.Revision() <= rev {
		// The last change of the snapshot's keys is at or before its
		// revision: it is the one to check, in one request a pattern.
		return ix.matchSnapshot(ctx, last, skipped, rev, c)
	}
	to, width := rev, uint64(snapshotTailWindow)
	for range snapshotTailWindows {
		if to == 0 {
			return nil // the bucket holds nothing at or before rev: every key changed since
		}
		from := max(to, width) - width + 1
		var mismatch error
		n := 0
		_, err := kvwatch.Range(ctx, ix.views, from, to, snapshotTailMax, func(e jetstream.KeyValueEntry) {
			if _, ok := c.covers(e.Key()); ok || c.of == nil {
				n++
				if mismatch == nil {
					mismatch = ix.matchSnapshot(ctx, e, skipped, rev, c)
				}
			}
		})
		switch {
		case mismatch != nil:
			return mismatch
		case err != nil:
			return fmt.Errorf("%w: read the views bucket's revisions %d to %d: %v", errSnapshotUnchecked, from, to, err)
		case n > 0:
			return nil
		}
		to, width = from-1, width*16
	}
	if to == 0 {
		return nil
	}
	return fmt.Errorf("%w: the views bucket holds no key last written in the %d revisions before the snapshot's %d", errSnapshotUnchecked, rev-to, rev)
}

// lastOf returns the last change of the keys matching patterns, if
// there are patterns, the keys have changes and the bucket answers.
func (ix *Index) lastOf(ctx context.Context, patterns []string) (jetstream.KeyValueEntry, bool) {
	var last jetstream.KeyValueEntry
	for _, p := range patterns {
		e, err := kvwatch.Last(ctx, ix.views.js, ix.views.Bucket(), p)
		if err != nil {
			return nil, false
		}
		if last == nil || e.Revision() > last.Revision() {
			last = e
		}
	}
	return last, last != nil
}

// matchSnapshot checks the snapshot of revision at in c against e, the
// bucket's last change of its key, made at or before at.
func (ix *Index) matchSnapshot(ctx context.Context, e jetstream.KeyValueEntry, skipped map[string]uint64, at uint64, c snapCheck) error {
	key, rev := e.Key(), e.Revision()
	id, covered := c.covers(key)
	if !covered {
		return nil // not a key of the snapshot's records: it keeps nothing of it
	}
	var held index.Held
	var ok bool
	c.snap.Update(func(b *index.Batch) { held, ok = b.Held(id) })
	if e.Operation() != jetstream.KeyValuePut {
		if ok && !ix.movedBy(ctx, id, at) {
			return kvstore.Invalid("records", "the views bucket deleted record %s at revision %d, before the snapshot's revision, and the snapshot holds it", kvstore.Quote(id), rev)
		}
		return nil
	}
	v, err := storedView(key, e.Value())
	if err != nil {
		if skipped[key] != rev {
			return kvstore.Invalid("skipped", "the views bucket's value of key %s at revision %d does not validate and the snapshot does not list it as skipped at that revision", kvstore.Quote(key), rev)
		}
		return nil
	}
	switch {
	case !ok:
		return kvstore.Invalid("records", "the views bucket holds record %s at revision %d, before the snapshot's revision, and the snapshot does not", kvstore.Quote(id), rev)
	case held.Version != v.Version || held.Status != v.State.Status:
		return kvstore.Invalid("revision", "the views bucket holds record %s at version %d (%s) since revision %d, before the snapshot's revision, and the snapshot at version %d (%s): the snapshot is not of the revision it says",
			kvstore.Quote(id), v.Version, v.State.Status, rev, held.Version, held.Status)
	}
	return nil
}
