package processor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/kvstore"
)

// HoldBucket is the KV bucket of ordering holds, shared by every context:
// one key per (function, aggregate), see HoldKey.
const HoldBucket = "amends_holds"

// MaxHeld bounds the events one hold keeps behind its head. An event that
// would exceed it is left un-acked and redelivered after the nak delay, so
// it is never lost and never run out of order; the bound keeps a hold's
// value well under JetStream's message size limit.
const MaxHeld = 4096

// MaxHoldAudit bounds the skips a hold remembers (the oldest go first).
const MaxHoldAudit = 64

// HeaderResolve marks, on a record's stream, a prepare that an operator's
// release wrote only to mark the record resolved: the replay consumer does
// not replay it.
const HeaderResolve = "amends-resolve"

// HoldKey returns the KV key of the hold of function (processor, name) of
// context on aggregate (aggregateType, id): see api.HoldKey.
func HoldKey(context, processor, name, aggregateType, id string) string {
	return api.HoldKey(context, processor, name, aggregateType, id)
}

// contains reports whether the hold has event id as head or held.
func holdContains(h *api.Hold, eventID string) bool {
	if h.Head.EventID == eventID {
		return true
	}
	return slices.ContainsFunc(h.Held, func(r api.HeldEvent) bool { return r.EventID == eventID })
}

// hold inserts r in version order (then index), keeping Held sorted.
func holdInsert(h *api.Hold, r api.HeldEvent) {
	i, _ := slices.BinarySearchFunc(h.Held, r, func(a, b api.HeldEvent) int {
		if a.Version != b.Version {
			return cmp.Compare(a.Version, b.Version)
		}
		return a.Index - b.Index
	})
	h.Held = slices.Insert(h.Held, i, r)
}

// remove drops the held event id; false if it is not held.
func holdRemove(h *api.Hold, eventID string) bool {
	i := slices.IndexFunc(h.Held, func(r api.HeldEvent) bool { return r.EventID == eventID })
	if i < 0 {
		return false
	}
	h.Held = slices.Delete(h.Held, i, i+1)
	return true
}

// errNoHold is what an update's change returns to mean "the key does not
// exist"; update returns it when the key is gone.
var errNoHold = errors.New("no hold")

// errUnchanged, returned by an update's change, leaves the hold as it is.
var errUnchanged = errors.New("hold unchanged")

// holds is the holds bucket, typed.
type holds = kvstore.Store[api.Hold]

// updateHold reads key, applies change and writes the result with CAS on
// the revision read, retrying on a concurrent write (the bucket's Change
// loop). change returns del=true to delete the key (CAS as well),
// errUnchanged to write nothing. It returns the hold written (or the one
// left unchanged), errNoHold if the key does not exist, and an
// *invalidHoldError if its stored value does not validate (change is not
// called with it).
func updateHold(ctx context.Context, kv *holds, key string, change func(h *api.Hold) (del bool, err error)) (api.Hold, error) {
	h, _, err := updateHoldRev(ctx, kv, key, change)
	return h, err
}

// invalidHoldError is a stored hold that does not validate, at revision
// Rev; the runtime replaces it (holdRuntime.repair).
type invalidHoldError struct {
	Rev   uint64
	Cause *kvstore.InvalidError
}

func (e *invalidHoldError) Error() string { return e.Cause.Error() }
func (e *invalidHoldError) Unwrap() error { return e.Cause }

// updateHoldRev is updateHold that also returns the revision written (the
// deletion's for a deleted key; 0 when nothing was written).
func updateHoldRev(ctx context.Context, kv *holds, key string, change func(h *api.Hold) (del bool, err error)) (api.Hold, uint64, error) {
	deleted, read := false, uint64(0)
	h, rev, err := kv.Change(ctx, key, func(cur kvstore.Current[api.Hold]) (api.Hold, kvstore.Action, error) {
		read = cur.Revision
		switch {
		case cur.Invalid != nil:
			return api.Hold{}, kvstore.Keep, &invalidHoldError{Rev: cur.Revision, Cause: cur.Invalid}
		case !cur.Exists():
			return api.Hold{}, kvstore.Keep, errNoHold
		}
		h := cur.Value
		del, err := change(&h)
		if err != nil {
			return h, kvstore.Keep, err
		}
		deleted = del
		if del {
			return h, kvstore.Remove, nil
		}
		return h, kvstore.Write, nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return h, 0, nil
	case err != nil:
		return h, 0, err
	case deleted:
		return h, read + 1, nil // a deletion's revision is not returned; at least this
	}
	return h, rev, nil
}

// createHoldRev writes a new hold and returns its revision; 0 if one
// exists already.
func createHoldRev(ctx context.Context, kv *holds, h api.Hold) (uint64, error) {
	rev, err := kv.Create(ctx, h.Key(), h)
	if errors.Is(err, kvstore.ErrConflict) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("create hold %s: %w", h.Key(), err)
	}
	return rev, nil
}

// holdsBucket creates or binds the holds bucket, reporting holds that do
// not validate to q.
func holdsBucket(ctx context.Context, js jetstream.JetStream, replicas int, opts ...kvstore.Option) (*holds, error) {
	b, err := kvstore.Open(ctx, js, holdSpec(replicas), opts...)
	if err != nil {
		return nil, fmt.Errorf("the holds bucket: %w", err)
	}
	return kvstore.For(b, holdCodec), nil
}

// headOf builds the head of a new hold on record's failure of f.
func headOf(f *function, eid aggregate.EventID, now int64) api.HoldHead {
	return api.HoldHead{Record: aggregate.RecordID(eid.ID, f.info), EventID: eid.ID, Version: eid.Version, Seq: eid.Seq, Since: now}
}
