package processor

import (
	"context"
	"errors"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/kvstore"
)

// repairTimeout bounds one repair of a damaged hold.
const repairTimeout = 10 * time.Second

// repairHold replaces a damaged hold (see damage) so that the aggregate's
// events stay held and no held event is lost:
//
//   - a stored value that does not validate, seen after a valid one: the
//     valid one is written back over it (compare-and-set on the damage);
//   - a hold deleted while it still held events: it is written back,
//     releasing if its head record has succeeded meanwhile;
//   - a value that does not validate, with no valid one seen before (at
//     start-up): a recovered hold is written over it (recoveredHold), which
//     holds the aggregate's next events until an operator releases it.
//
// The damage is in the quarantine: the store reported the invalid value,
// and a deletion is reported here. A repair that loses a race to another
// writer (another instance repaired it first) changes nothing. Failures
// are logged; the key stays held, and the next delivery tries again.
func (p *Processor) repairHold(ctx context.Context, rt *holdRuntime, d damage) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), repairTimeout)
	defer cancel()
	log := p.o.logger.With("context", p.context, "key", kvstore.QuoteKey(d.key), "revision", d.rev)
	var (
		h   api.Hold
		rev uint64
		err error
		how string
	)
	switch {
	case d.deleted && d.prev != nil:
		rt.kv.Report(ctx, d.key, d.rev, "", d.cause.Error()+"; it is written back from the last value seen")
		h, how = *d.prev, "restored after its deletion"
		if !h.Releasing && h.Head.Record != "" {
			if st, _, gerr := p.o.records.Get(ctx, h.Head.Record); gerr == nil && st.Status == aggregate.StatusSucceeded {
				h.Releasing, h.Claim = true, nil // its head succeeded meanwhile: release what it held
			}
		}
		rev, err = rt.kv.Create(ctx, d.key, h)
	case d.prev != nil:
		h, how = *d.prev, "restored from the last value seen"
		rev, err = rt.kv.Update(ctx, d.key, h, d.rev)
	default:
		k, kerr := parseHoldKey(d.key)
		if kerr != nil {
			log.Warn("amends processor: a stored hold under a key no hold has is left as it is (quarantined)", "err", d.cause)
			return
		}
		h, how = recoveredHold(k, d.rev, d.cause.Error(), p.o.clock.Now()), "replaced by a recovered hold that holds the aggregate's events until an operator releases it"
		rev, err = rt.kv.Update(ctx, d.key, h, d.rev)
	}
	switch {
	case errors.Is(err, kvstore.ErrConflict):
		log.Debug("amends processor: a damaged hold changed before its repair; left to the last writer")
		return
	case err != nil:
		log.Warn("amends processor: cannot repair a damaged hold; its events stay held", "err", err)
		return
	}
	rt.cache.put(d.key, h, rev)
	log.Warn("amends processor: damaged hold "+how, "held", len(h.Held), "cause", d.cause)
}
