package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
)

// The views bucket is derived from the event store, and whoever can write
// the bucket can write a view its history does not make: a failed record
// shown as SUCCEEDED is never retried, whatever the index reloads. Every
// reader checks that a view is well formed (checkView); only its history
// tells whether it is true. So the index audits the views it holds
// against their histories (WithAudit): the reprojector rebuilds each from
// the event store and replaces a stored view that differs from it on
// anything that steers work (viewDiff), reporting the field to the
// quarantine. It audits:
//
//   - at once, a view the watch delivers that the projector would not
//     write: the version the index holds with another status, or a version
//     below it;
//   - every record in turn, at a bounded rate, so a view changed while no
//     index watched (or a snapshot's record) is found within a round.

// WithAudit makes the index audit perSecond of its records a second
// against their histories (see above), suspicious changes first; it
// needs WithReprojector, which does the work: two reads (the view and the
// record's history) a record, and a write for a view that differs. 0
// turns the audit off; at most MaxAuditRate.
func WithAudit(perSecond int) IndexOption {
	return func(ix *Index) error {
		if !bounds.Within(perSecond, 0, MaxAuditRate) {
			return fmt.Errorf("the audit rate must be 0 to %d records a second, got %d: %w", MaxAuditRate, perSecond, ErrInvalidOption)
		}
		ix.auditRate = perSecond
		return nil
	}
}

// MaxAuditRate bounds WithAudit.
const MaxAuditRate = 10_000

// DefaultAuditRate is the audit rate amends serve starts with.
const DefaultAuditRate = 20

// auditSuspects bounds the suspicious views waiting for their audit; past
// it they wait for the round.
const auditSuspects = 1024

// auditWalk is how many ids the round takes from the index at a time.
const auditWalk = 64

// suspect asks for record id's audit ahead of the round.
func (ix *Index) suspect(id string) {
	select {
	case ix.suspects <- id:
	default:
	}
}

// auditLoop audits records at the audit rate until ctx ends, once the
// index has loaded.
func (ix *Index) auditLoop(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-ix.ready:
	}
	tick := time.NewTicker(time.Second / time.Duration(ix.auditRate))
	defer tick.Stop()
	var round []string
	var cursor uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var id string
		select {
		case id = <-ix.suspects:
		default:
			if len(round) == 0 {
				round, cursor = ix.Walk(cursor, auditWalk)
			}
			if len(round) == 0 {
				continue // an empty index
			}
			id, round = round[0], round[1:]
		}
		ix.audit(ctx, id)
	}
}

// audit brings record id's view back to its history.
func (ix *Index) audit(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(ctx, repairTimeout)
	defer cancel()
	ix.audited.Add(1)
	switch err := ix.reprojector.Reproject(rctx, id); {
	case err == nil, ctx.Err() != nil:
	case errors.Is(err, ErrCorruptView):
		ix.logger.Warn("index: the audit cannot project a record again: its history does not make a valid view (amends quarantine list shows why)", "record", id, "err", err)
	default:
		ix.logger.Warn("index: the audit could not check a record against its history; it is checked again in the next round", "record", id, "err", err)
	}
}

// Audited returns how many records the audit has checked since Run
// started. Safe for concurrent use.
func (ix *Index) Audited() int64 { return ix.audited.Load() }
