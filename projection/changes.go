package projection

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/index"
)

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
	names   string // the processor a processor key names (ProcessorKey)
	other   string // the processor of a view of a partition the index does not hold (its id in deleted)
	at      string // with deleted, in a reload: the processor of the deleted key
	skip    bool   // a reload skips it (reload.skips); other says whose view it is, if not held
}

// applyBatch decodes updates outside the lock and applies them under it.
// gen is the watch that delivered them; applyBatch reports whether its
// initial values end in this batch.
func (ix *Index) applyBatch(batch []jetstream.KeyValueEntry, gen uint32) (ready bool) {
	ix.mu.Lock()
	rt := route{held: ix.loading, reload: ix.reload}
	ix.mu.Unlock()
	changes := decodeChanges(batch, rt)
	var out applied
	ix.mu.Lock()
	ix.Index.Update(func(b *index.Batch) { out = ix.applyChanges(b, changes, gen) })
	ready, repair, dropped, suspects := out.ready, out.repair, out.dropped, out.suspects
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

// route is how a watch sorts the changes of view keys: held, with
// WithPartitions, the partitions it holds; reload, if it reloads after a
// change of them.
type route struct {
	held   *partition.Set
	reload *reload
}

// decodeChanges decodes a batch of updates (nil: the initial values end),
// outside the index's lock. A view whose key is of a partition rt.held
// does not hold is not decoded: for this index it is gone; nor is a change
// a reload skips.
func decodeChanges(batch []jetstream.KeyValueEntry, rt route) []change {
	changes := make([]change, 0, len(batch))
	for _, e := range batch {
		if e == nil {
			changes = append(changes, change{ready: true})
			continue
		}
		put := e.Operation() == jetstream.KeyValuePut
		if proc, ok := processorOfKey(e.Key()); ok && put && len(e.Value()) == 0 {
			changes = append(changes, change{key: e.Key(), rev: e.Revision(), names: proc})
			continue
		}
		if c, ok := rt.sort(e, put); ok {
			changes = append(changes, c)
			continue
		}
		if put {
			changes = append(changes, decodePut(e))
			continue
		}
		// Deleted or purged.
		c := change{key: e.Key(), rev: e.Revision()}
		if proc, id, err := ParseKey(e.Key()); err == nil {
			c.deleted = id
			if rt.reload != nil {
				c.at = proc
			}
		} // else not a record: only forget the key
		changes = append(changes, c)
	}
	return changes
}

// sort returns the change of e (put: a view, else a deletion) if it needs
// no decoding: one a reload skips, or a view of a partition rt.held does
// not hold. Any other change, and the change of a key that is not a
// view's, is decoded (decodePut says why a value is not a view).
func (rt route) sort(e jetstream.KeyValueEntry, put bool) (change, bool) {
	if rt.held == nil {
		return change{}, false
	}
	proc, id, err := ParseKey(e.Key())
	if err != nil {
		return change{}, false
	}
	_, mine := rt.held.Of(proc, id)
	switch {
	case rt.reload != nil && rt.reload.skips(rt.held, proc, id, e.Revision()):
		c := change{key: e.Key(), rev: e.Revision(), skip: true}
		if put && !mine {
			c.other = proc // counted as a load in full counts it (Unplaced)
		}
		return c, true
	case put && !mine:
		return change{key: e.Key(), rev: e.Revision(), deleted: id, other: proc}, true
	}
	return change{}, false
}

// decodePut decodes a view written to the bucket: its fields by the fast
// path, or the whole view; a value that is no valid view is corrupt.
func decodePut(e jetstream.KeyValueEntry) change {
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
	return c
}

// recordID is the id of the record c puts.
func (c *change) recordID() string {
	if c.fast {
		return string(c.fields.id)
	}
	return c.view.State.ID
}

// processor is the processor of the record c puts.
func (c *change) processor() string {
	if c.fast {
		return string(c.fields.fnProcessor)
	}
	return c.view.State.Function.ProcessorName
}

// applied is what a batch of changes did to the index.
type applied struct {
	ready, repair bool // the initial values ended; a corrupt view wants repair
	dropped       int  // records the end of a load dropped
	suspects      []string
}

// applyChanges applies changes to the index in b, under ix.mu.
func (ix *Index) applyChanges(b *index.Batch, changes []change, gen uint32) (out applied) {
	for i := range changes {
		c := &changes[i]
		ix.rev = max(ix.rev, c.rev)
		switch {
		case c.ready:
			ix.synced = true
			if ix.start.Took == 0 {
				ix.start.Took = time.Since(ix.began)
			}
			out.dropped = b.EndLoad(true)
			if ix.reload != nil {
				// No sweep: a reload skips the corrupt keys it already
				// counted, and dropMoved forgot those it no longer holds.
				ix.reloaded(ix.reload)
			} else if gen > 1 {
				ix.sweepCorrupt(gen)
			}
			ix.reload = nil
			out.ready = true
			ix.claimed = ix.loading != nil
		case c.corrupt:
			// What the index held of the record stays until the view is
			// projected again.
			ix.corrupt[c.key] = corruptKey{gen: gen, rev: c.rev, why: c.why}
			out.repair = true
		case c.skip:
			if ix.reload != nil {
				ix.reload.skipped++
			}
			if c.other != "" {
				ix.dropped(c.other)
			}
		case c.names != "":
			ix.known(c.names)
		case c.other != "":
			delete(ix.corrupt, c.key)
			b.Remove(c.deleted)
			ix.dropped(c.other)
		case c.deleted != "":
			delete(ix.corrupt, c.key)
			removeAt(b, c.deleted, c.at)
		case c.fast || c.view.State.ID != "":
			delete(ix.corrupt, c.key)
			ix.applyPut(b, c, &out)
		default:
			delete(ix.corrupt, c.key)
		}
	}
	return out
}

// removeAt removes record id, unless processor is set and the record b
// holds is of another processor. A reload reads the deletion of a key a
// record left for another processor's key that the index already held
// (the view there is a change the reload skips): it must not remove the
// record.
func removeAt(b *index.Batch, id, processor string) {
	if processor != "" {
		if h, ok := b.Held(id); ok && h.Processor != processor {
			return
		}
	}
	b.Remove(id)
}

// applyPut applies the view c puts: kept, or dropped if it is of a
// partition this instance does not hold (or no longer: its function
// changed). Under ix.mu.
func (ix *Index) applyPut(b *index.Batch, c *change, out *applied) {
	if ix.loading != nil {
		proc, id := c.processor(), c.recordID()
		if _, ok := ix.loading.Of(proc, id); !ok {
			b.Remove(id)
			ix.dropped(proc)
			return
		}
	}
	if c.fast {
		r := c.fields.record()
		if ix.auditRate > 0 && !b.Loading() && odd(b, string(r.ID), r.Version, aggregate.Status(r.Status)) {
			out.suspects = append(out.suspects, string(r.ID))
		}
		b.PutFields(&r)
		return
	}
	if ix.auditRate > 0 && !b.Loading() && odd(b, c.view.State.ID, c.view.Version, c.view.State.Status) {
		out.suspects = append(out.suspects, c.view.State.ID)
	}
	b.Put(&c.view)
}
