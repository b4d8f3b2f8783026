package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/kvstore"
)

// A hold waits on its head record: the replay of the head's event, once
// it succeeds, releases what the hold holds. A hold whose head record does
// not exist waits for ever, so the processor checks that it exists
// (checkHeads) once the hold is older than headGrace: a head's recording
// may have failed, and its event is then redelivered until the recording
// succeeds, which takes about the delivery backoff. A head still missing
// after that (a hold written by someone else, a record deleted from the
// event store) is not waited on: the hold becomes a recovered one (no
// head, the head's event held first, so nothing is lost), which holds the
// aggregate's events with its reason shown until an operator releases it,
// and the value is reported to the quarantine with the field named.

// headGrace is how long a hold may wait on a head record that does not
// exist before it is recovered.
const headGrace = 10 * time.Minute

// headChecks bounds the head records read in one round, one round every
// headPoll.
const (
	headChecks = 64
	headPoll   = time.Second
)

// runHeadChecks runs checkHeads every headPoll until ctx ends.
func (p *Processor) runHeadChecks(ctx context.Context) {
	checked := make(map[string]uint64) // holds whose head record was found, at their revision
	t := time.NewTicker(headPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.checkHeads(ctx, checked)
		}
	}
}

// checkHeads reads the head record of every hold older than headGrace
// that it has not found at the hold's revision (checked: key → revision),
// and recovers each hold whose head does not exist.
func (p *Processor) checkHeads(ctx context.Context, checked map[string]uint64) {
	rt := p.holds
	before := p.o.clock.Now().Add(-headGrace).UnixMilli()
	n := 0
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
			p.recoverHeadless(ctx, w.key, w.rev, w.hold.Head)
		default:
			p.o.logger.Debug("amends processor: cannot read a hold's head record; checked again later", "key", kvstore.QuoteKey(w.key), "err", err)
		}
	}
	if len(checked) > maxHoldRevs {
		clear(checked)
	}
}

// recoverHeadless makes the hold under key, at revision rev with head,
// a recovered hold that holds head's event first.
func (p *Processor) recoverHeadless(ctx context.Context, key string, rev uint64, head HoldHead) {
	why := fmt.Sprintf("its head record %s does not exist in the event store (the hold began %s)",
		kvstore.Quote(head.Record), time.UnixMilli(head.Since).UTC().Format(time.RFC3339))
	now := p.o.clock.Now()
	changed := false
	_, err := p.holds.update(ctx, key, func(h *Hold) (bool, error) {
		if changed = h.Head == head && !h.Releasing && h.Recovered == nil; !changed {
			return false, errUnchanged // changed since: checked again at its new revision
		}
		ms := max(now.UnixMilli(), 1)
		holdInsert(h, HeldEvent{EventID: head.EventID, Version: head.Version, Seq: head.Seq, HeldAt: ms})
		h.Head = HoldHead{Since: head.Since}
		h.Recovered = &HoldRecovery{Revision: rev, Reason: clipText(why, 2000), At: ms}
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
