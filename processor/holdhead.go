package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
)

// A hold waits on its head record: the replay of the head's event, once
// it succeeds, releases what the hold holds. A hold whose head record does
// not exist waits for ever, so the processor checks that it exists
// (checkHeads). The head's recording may have failed: then its message is
// not acked, and it is redelivered until the recording succeeds (gateHead).
// So a head record is missing for good only once the function's consumer
// has acked the head's message (its ack floor is at or past the head's
// sequence) and the hold is older than headGrace. Such a hold (written by
// someone else, or whose record was deleted from the event store) is not
// waited on: it becomes a recovered hold (no head, the head's event held
// first, so nothing is lost), which holds the aggregate's events with its
// reason shown until an operator releases it, and the value is reported
// to the quarantine with the field named.

// headGrace is how long a hold may wait on a head record that does not
// exist, once the head's message is acked, before it is recovered.
const headGrace = time.Minute

// headChecks bounds the head records read in one round, one round every
// headPoll.
const (
	headChecks = 64
	headPoll   = time.Second
)

// runHeadChecks runs checkHeads every headPoll until ctx ends.
func (p *Processor) runHeadChecks(ctx context.Context) {
	checked := make(map[string]uint64) // holds whose head record was found, at their revision
	wait.Every(ctx, headPoll, func() { p.checkHeads(ctx, checked) })
}

// checkHeads reads the head record of every hold older than headGrace
// that it has not found at the hold's revision (checked: key → revision),
// and recovers each hold whose head does not exist.
func (p *Processor) checkHeads(ctx context.Context, checked map[string]uint64) {
	rt := p.holds
	before := p.o.clock.Now().Add(-headGrace).UnixMilli()
	n := 0
	floors := map[string]uint64{} // processor → its consumer's ack floor, read once a round
	for _, w := range rt.cache.waiting(before) {
		if checked[w.key] == w.rev {
			continue
		}
		if n++; n > headChecks {
			return // the next round
		}
		_, _, err := p.o.records.Get(ctx, w.hold.Head.Record)
		switch {
		case err == nil:
			checked[w.key] = w.rev
		case errors.Is(err, aggregate.ErrNotFound):
			if floors[w.hold.Processor] == 0 {
				floors[w.hold.Processor] = p.consumerFloor(ctx, w.hold.Processor)
			}
			if floors[w.hold.Processor] >= w.hold.Head.Seq {
				p.recoverHeadless(ctx, w.key, w.rev, w.hold.Head)
			} // else the head's message is still to be redelivered: its recording may yet succeed
		default:
			p.o.logger.Debug("amends processor: cannot read a hold's head record; checked again later", "key", kvstore.QuoteKey(w.key), "err", err)
		}
	}
	if len(checked) > maxHoldRevs {
		clear(checked)
	}
}

// consumerFloor returns the stream sequence up to which processor's
// consumer has acked every message; 0 if it cannot be read.
func (p *Processor) consumerFloor(ctx context.Context, processor string) uint64 {
	c, err := p.js.Consumer(ctx, p.store.StreamName(p.context), DurableName(p.context, processor))
	if err != nil {
		return 0
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0
	}
	return info.AckFloor.Stream
}

// recoverHeadless makes the hold under key, at revision rev with head,
// a recovered hold that holds head's event first.
func (p *Processor) recoverHeadless(ctx context.Context, key string, rev uint64, head api.HoldHead) {
	why := fmt.Sprintf("its head record %s does not exist in the event store (the hold began %s)",
		kvstore.Quote(head.Record), time.UnixMilli(head.Since).UTC().Format(time.RFC3339))
	now := p.o.clock.Now()
	changed := false
	_, err := p.holds.update(ctx, key, func(h *api.Hold) (bool, error) {
		if changed = h.Head == head && !h.Releasing && h.Recovered == nil; !changed {
			return false, errUnchanged // changed since: checked again at its new revision
		}
		ms := max(now.UnixMilli(), 1)
		holdInsert(h, api.HeldEvent{EventID: head.EventID, Version: head.Version, Seq: head.Seq, HeldAt: ms})
		h.Head = api.HoldHead{Since: head.Since}
		h.Recovered = &api.HoldRecovery{Revision: rev, Reason: clipText(why, 2000), At: ms}
		return false, nil
	})
	log := p.o.logger.With("context", p.context, "key", kvstore.QuoteKey(key), "revision", rev)
	switch {
	case errors.Is(err, errNoHold), err == nil && !changed:
		return
	case err != nil:
		log.Warn("amends processor: cannot recover a hold whose head record does not exist; tried again later", "err", err)
		return
	}
	p.holds.kv.Report(ctx, key, rev, "head.record", why+"; the hold now holds its head's event first and waits for an operator's release (amends holds release)")
	log.Warn("amends processor: a hold waited on a head record that does not exist; it holds the aggregate's events until an operator releases it",
		"record", head.Record, "event", head.EventID)
}
