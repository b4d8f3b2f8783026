package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
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

// Hold is the durable state of one (function, aggregate): see api.Hold.
type Hold = api.Hold

// HoldHead, HeldEvent, HoldAudit, HeldSkip and HoldClaim are the parts of
// a Hold.
type (
	HoldHead  = api.HoldHead
	HeldEvent = api.HeldEvent
	HoldAudit = api.HoldAudit
	HeldSkip  = api.HeldSkip
	HoldClaim = api.HoldClaim
)

// HoldKey returns the KV key of the hold of function (processor, name) of
// context on aggregate (aggregateType, id): see api.HoldKey.
func HoldKey(context, processor, name, aggregateType, id string) string {
	return api.HoldKey(context, processor, name, aggregateType, id)
}

// contains reports whether the hold has event id as head or held.
func holdContains(h *Hold, eventID string) bool {
	if h.Head.EventID == eventID {
		return true
	}
	return slices.ContainsFunc(h.Held, func(r HeldEvent) bool { return r.EventID == eventID })
}

// hold inserts r in version order (then index), keeping Held sorted.
func holdInsert(h *Hold, r HeldEvent) {
	i, _ := slices.BinarySearchFunc(h.Held, r, func(a, b HeldEvent) int {
		if a.Version != b.Version {
			return cmpU(a.Version, b.Version)
		}
		return a.Index - b.Index
	})
	h.Held = slices.Insert(h.Held, i, r)
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// remove drops the held event id; false if it is not held.
func holdRemove(h *Hold, eventID string) bool {
	i := slices.IndexFunc(h.Held, func(r HeldEvent) bool { return r.EventID == eventID })
	if i < 0 {
		return false
	}
	h.Held = slices.Delete(h.Held, i, i+1)
	return true
}

// decodeHold decodes a hold's KV value.
func decodeHold(b []byte) (Hold, error) {
	var h Hold
	if err := json.Unmarshal(b, &h); err != nil {
		return Hold{}, fmt.Errorf("decode hold: %w", err)
	}
	return h, nil
}

// errNoHold is what an update's change returns to mean "the key does not
// exist"; update returns it when the key is gone.
var errNoHold = errors.New("no hold")

// errUnchanged, returned by an update's change, leaves the hold as it is.
var errUnchanged = errors.New("hold unchanged")

// updateHold reads key, applies change and writes the result with CAS on
// the revision read, retrying on a concurrent write. change returns
// del=true to delete the key (CAS as well), errUnchanged to write nothing.
// It returns the hold written (or the one left unchanged), errNoHold if
// the key does not exist.
func updateHold(ctx context.Context, kv jetstream.KeyValue, key string, change func(h *Hold) (del bool, err error)) (Hold, error) {
	h, _, err := updateHoldRev(ctx, kv, key, change)
	return h, err
}

// updateHoldRev is updateHold that also returns the revision written (the
// deletion's for a deleted key; 0 when nothing was written).
func updateHoldRev(ctx context.Context, kv jetstream.KeyValue, key string, change func(h *Hold) (del bool, err error)) (Hold, uint64, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return Hold{}, 0, err
		}
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Hold{}, 0, errNoHold
		}
		if err != nil {
			return Hold{}, 0, fmt.Errorf("read hold %s: %w", key, err)
		}
		h, err := decodeHold(e.Value())
		if err != nil {
			return Hold{}, 0, fmt.Errorf("hold %s: %w", key, err)
		}
		del, err := change(&h)
		if errors.Is(err, errUnchanged) {
			return h, 0, nil
		}
		if err != nil {
			return h, 0, err
		}
		rev := e.Revision() + 1 // a deletion's revision is not returned; at least this
		if del {
			err = kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
		} else {
			var b []byte
			if b, err = json.Marshal(h); err != nil {
				return h, 0, err
			}
			rev, err = kv.Update(ctx, key, b, e.Revision())
		}
		if err == nil {
			return h, rev, nil
		}
		if !isCASConflict(err) || attempt > 1000 {
			return h, 0, fmt.Errorf("write hold %s: %w", key, err)
		}
	}
}

// createHoldRev writes a new hold and returns its revision; 0 if one
// exists already.
func createHoldRev(ctx context.Context, kv jetstream.KeyValue, h Hold) (uint64, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Create(ctx, h.Key(), b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("create hold %s: %w", h.Key(), err)
	}
	return rev, nil
}

// isCASConflict reports a KV write refused because the revision moved.
func isCASConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return true
	}
	return errors.Is(err, jetstream.ErrKeyExists) || strings.Contains(err.Error(), "wrong last sequence")
}

// holdsBucket creates or binds the holds bucket.
func holdsBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, HoldBucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("open the holds bucket %s: %w", HoldBucket, err)
	}
	kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: HoldBucket, Description: "amends ordering holds: one key per (function, aggregate)",
		History: 1, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, HoldBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("create the holds bucket %s: %w", HoldBucket, err)
	}
	return kv, nil
}

// headOf builds the head of a new hold on record's failure of f.
func headOf(f *function, eid aggregate.EventID, now int64) HoldHead {
	return HoldHead{Record: aggregate.RecordID(eid.ID, f.info), EventID: eid.ID, Version: eid.Version, Seq: eid.Seq, Since: now}
}
