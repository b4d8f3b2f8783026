package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// WithHoldReplicas sets the replica count of the holds bucket when the
// processor creates it (default 1; use 3 on a cluster).
func WithHoldReplicas(n int) Option {
	return func(o *options) error {
		if !bounds.Within(n, 1, 5) {
			return invalidOption("hold replicas must be between 1 and 5, got %d", n)
		}
		o.holdReplicas = n
		return nil
	}
}

// holdRuntime is a running processor's view of its holds.
type holdRuntime struct {
	kv       *holds
	cache    *holdCache
	owner    string                    // this Run's claim owner
	watch    func(ctx context.Context) // feeds the cache until ctx ends
	progress *progress
	repair   func(ctx context.Context, d damage) // repairHold
}

// ordered reports whether any registered function is Ordered.
func (p *Processor) ordered() bool {
	for _, g := range p.groups {
		if len(g.ordered) > 0 {
			return true
		}
	}
	return false
}

// startHolds opens the holds bucket and loads the context's holds, when an
// Ordered function is registered. ctx bounds the watch.
func (p *Processor) startHolds(ctx context.Context) error {
	if !p.ordered() {
		return nil
	}
	if p.o.recorder == nil || p.o.records == nil {
		return fmt.Errorf("processor of context %s: Ordered functions need WithRecorder and WithRecords, since holds wait on records: %w", p.context, ErrInvalidFunction)
	}
	kopts := []kvstore.Option{kvstore.WithRecorder(p.o.quarantine), kvstore.WithLogger(p.o.logger), kvstore.WithClock(p.o.clock.Now)}
	kv, err := holdsBucket(ctx, p.js, p.o.holdReplicas, kopts...)
	if err != nil {
		return fmt.Errorf("processor of context %s: %w", p.context, err)
	}
	progress, err := progressBucket(ctx, p.js, p.o.holdReplicas, kopts...)
	if err != nil {
		return fmt.Errorf("processor of context %s: %w", p.context, err)
	}
	rt := &holdRuntime{kv: kv, cache: newHoldCache(), owner: uuid.NewString(), progress: newProgress(progress)}
	rt.cache.decode = func(e jetstream.KeyValueEntry) (api.Hold, error) { return kv.DecodeEntry(ctx, e) }
	rt.cache.damaged = func(d damage) { p.repairHold(ctx, rt, d) }
	rt.repair = func(ctx context.Context, d damage) { p.repairHold(ctx, rt, d) }
	if rt.watch, err = watchHolds(ctx, p.js, kv.KV(), p.context, rt.cache, p.o.logger); err != nil {
		return fmt.Errorf("processor of context %s: %w", p.context, err)
	}
	p.holds = rt
	return nil
}

// holdKey is the key of f's hold on d's aggregate.
func (p *Processor) holdKey(f *function, a aggregate.WireAggregateID) string {
	return HoldKey(p.context, f.info.ProcessorName, f.info.Name, a.AggregateName, a.AggregateID)
}

// gate is what the hold of an Ordered function says about a delivery.
type gate int

const (
	gateRun   gate = iota // not held: call the function
	gateHeld              // held behind the head: do not call it
	gateHead              // the head's own event, never recorded: call it again
	gateRetry             // the hold could not be read or is full: redeliver
)

// gate checks d against f's hold and, when held, adds d to it (CAS).
// Only a key the cache knows, or whose progress says it was held (held,
// written by whichever instance dispatched the version before), is read
// from the bucket, so an aggregate without a hold costs one map lookup.
func (p *Processor) gate(ctx context.Context, f *function, d *Delivery, held bool) gate {
	eid := d.EventRef()
	key := p.holdKey(f, eid.AggregateID)
	if !held && !p.holds.cache.held(key) {
		return gateRun
	}
	head := false
	ref := api.HeldEvent{EventID: eid.ID, Version: eid.Version, Seq: eid.Seq, Index: d.Index, HeldAt: p.o.clock.Now().UnixMilli()}
	h, err := p.holds.update(ctx, key, func(h *api.Hold) (bool, error) {
		switch {
		case h.Head.EventID == eid.ID:
			head = true
			return false, errUnchanged
		case holdContains(h, eid.ID):
			return false, errUnchanged // a redelivery
		case len(h.Held) >= MaxHeld:
			return false, errHoldFull
		}
		holdInsert(h, ref)
		return false, nil
	})
	switch {
	case errors.Is(err, errNoHold):
		return gateRun // released meanwhile
	case errors.Is(err, kvstore.ErrInvalid):
		return gateRetry // the stored hold is being repaired: held until then (and logged by the quarantine)
	case err != nil:
		p.o.logger.Warn("amends processor: cannot hold the event; it will be redelivered",
			"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key, "event", eid.ID, "err", err)
		return gateRetry
	case head:
		// The head's event again: held if its record exists (the replay
		// will run it), else its recording failed and it runs again.
		if _, _, err := p.o.records.Get(ctx, h.Head.Record); errors.Is(err, aggregate.ErrNotFound) {
			return gateHead
		} else if err != nil {
			return gateRetry
		}
		return gateHeld
	}
	f.stats.Held.Add(1)
	return gateHeld
}

var errHoldFull = fmt.Errorf("the hold already keeps %d events (the limit); the event waits for the release", MaxHeld)

// afterOrdered updates f's hold after it ran on d: a recorded (or
// unrecordable-for-now) final failure starts a hold with d as its head; a
// success of the head's own event starts the release. It returns false if
// the message must be redelivered.
func (p *Processor) afterOrdered(ctx context.Context, f *function, d *Delivery, g gate, err error, out Outcome) bool {
	eid := d.EventRef()
	key := p.holdKey(f, eid.AggregateID)
	if err == nil {
		if g != gateHead {
			return true
		}
		_, uerr := p.holds.update(ctx, key, func(h *api.Hold) (bool, error) {
			if h.Head.EventID != eid.ID || h.Releasing {
				return false, errUnchanged
			}
			h.Releasing = true
			return false, nil
		})
		return uerr == nil || errors.Is(uerr, errNoHold)
	}
	switch out {
	case OutcomeRecorded, OutcomeAlreadyRecorded, OutcomeRecordingFailed:
	default:
		return true
	}
	a := eid.AggregateID
	h := api.Hold{Context: p.context, Processor: f.info.ProcessorName, Function: f.info.Name, AggregateType: a.AggregateName,
		AggregateID: a.AggregateID, Head: headOf(f, eid, p.o.clock.Now().UnixMilli())}
	if g == gateHead {
		return true // the hold exists with this head
	}
	b, cerr := createHoldRev(ctx, p.holds.kv, h)
	if cerr != nil {
		p.o.logger.Warn("amends processor: cannot start the hold; the event will be redelivered",
			"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key, "err", cerr)
		return false
	}
	if b > 0 {
		p.holds.cache.put(key, h, b) // visible to this lane's next message at once
	}
	return true
}

// update is updateHold writing what it wrote through to the cache, so this
// instance sees its own changes at once. A stored hold that does not
// validate is repaired (repairHold) and the change tried once more.
func (rt *holdRuntime) update(ctx context.Context, key string, change func(h *api.Hold) (del bool, err error)) (api.Hold, error) {
	deleted := false
	run := func() (api.Hold, uint64, error) {
		return updateHoldRev(ctx, rt.kv, key, func(h *api.Hold) (bool, error) {
			del, err := change(h)
			deleted = del
			return del, err
		})
	}
	h, rev, err := run()
	var ie *invalidHoldError
	if errors.As(err, &ie) && rt.repair != nil {
		prev, ok := rt.cache.get(key)
		d := damage{key: key, rev: ie.Rev, cause: ie.Cause}
		if ok {
			d.prev = &prev
		}
		rt.repair(ctx, d)
		h, rev, err = run()
	}
	if errors.Is(err, errNoHold) {
		rt.cache.gone(key)
	}
	if err != nil || rev == 0 {
		return h, err
	}
	if deleted {
		rt.cache.set(key, nil, rev)
	} else {
		rt.cache.put(key, h, rev)
	}
	return h, nil
}
