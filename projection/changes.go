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
}

// applyBatch decodes updates outside the lock and applies them under it.
// gen is the watch that delivered them; applyBatch reports whether its
// initial values end in this batch.
func (ix *Index) applyBatch(batch []jetstream.KeyValueEntry, gen uint32) (ready bool) {
	ix.mu.Lock()
	held := ix.loading
	ix.mu.Unlock()
	changes := decodeChanges(batch, held)
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

// decodeChanges decodes a batch of updates (nil: the initial values end),
// outside the index's lock. With held (WithPartitions), a view whose key
// is of a partition held does not hold is not decoded: for this index it
// is gone.
func decodeChanges(batch []jetstream.KeyValueEntry, held *partition.Set) []change {
	changes := make([]change, 0, len(batch))
	for _, e := range batch {
		switch {
		case e == nil:
			changes = append(changes, change{ready: true})
		case e.Operation() == jetstream.KeyValuePut:
			if proc, ok := processorOfKey(e.Key()); ok && len(e.Value()) == 0 {
				changes = append(changes, change{key: e.Key(), rev: e.Revision(), names: proc})
				continue
			}
			if c, ok := foreign(e, held); ok {
				changes = append(changes, c)
				continue
			}
			changes = append(changes, decodePut(e))
		default: // deleted or purged
			c := change{key: e.Key(), rev: e.Revision()}
			if _, id, err := ParseKey(e.Key()); err == nil {
				c.deleted = id
			} // else not a record: only forget the key
			changes = append(changes, c)
		}
	}
	return changes
}

// foreign returns the change of a view e puts at the key of a partition
// held does not hold, and whether it is one. A key that is not a view's
// is not: decodePut says why.
func foreign(e jetstream.KeyValueEntry, held *partition.Set) (change, bool) {
	if held == nil {
		return change{}, false
	}
	proc, id, err := ParseKey(e.Key())
	if err != nil {
		return change{}, false
	}
	if _, ok := held.Of(proc, id); ok {
		return change{}, false
	}
	return change{key: e.Key(), rev: e.Revision(), deleted: id, other: proc}, true
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
			if gen > 1 {
				ix.sweepCorrupt(gen)
			}
			out.ready = true
			ix.claimed = ix.loading != nil
		case c.corrupt:
			// What the index held of the record stays until the view is
			// projected again.
			ix.corrupt[c.key] = corruptKey{gen: gen, rev: c.rev, why: c.why}
			out.repair = true
		case c.names != "":
			ix.known(c.names)
		case c.other != "":
			delete(ix.corrupt, c.key)
			b.Remove(c.deleted)
			ix.dropped(c.other)
		case c.deleted != "":
			delete(ix.corrupt, c.key)
			b.Remove(c.deleted)
		case c.fast || c.view.State.ID != "":
			delete(ix.corrupt, c.key)
			ix.applyPut(b, c, &out)
		default:
			delete(ix.corrupt, c.key)
		}
	}
	return out
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
