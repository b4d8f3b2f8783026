package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/quarantine"
)

// corruptKey is a key of the bucket whose value is not a valid view: the
// watch that last delivered it, its revision and why.
type corruptKey struct {
	gen uint32
	rev uint64
	why error
}

// WithReprojector makes the index hand the records whose stored view does
// not validate to r (the projector), which projects them again from their
// history; meanwhile they are left out of the index. Without it they are
// only left out, counted (Corrupt) and reported.
func WithReprojector(r Reprojector) IndexOption {
	return func(ix *Index) error {
		if r == nil {
			return fmt.Errorf("reprojector is nil: %w", ErrInvalidOption)
		}
		ix.reprojector = r
		return nil
	}
}

// WithIndexQuarantine records the stored views the index finds invalid in
// q (kind kv, reason invalid_entry); without it they are logged, at most
// once per interval.
func WithIndexQuarantine(q *quarantine.Quarantine) IndexOption {
	return func(ix *Index) error {
		if q == nil {
			return fmt.Errorf("quarantine is nil: %w", ErrInvalidOption)
		}
		ix.quarantine = q
		return nil
	}
}

// repairTimeout bounds one reprojection.
const repairTimeout = 30 * time.Second

func (ix *Index) signalRepair() {
	select {
	case ix.repair <- struct{}{}:
	default:
	}
}

// repairLoop reports the corrupt keys (once per revision) and hands their
// records to the reprojector, when told and every check interval, until
// ctx ends.
func (ix *Index) repairLoop(ctx context.Context) {
	tried := map[string]uint64{} // key → revision handed over
	t := time.NewTicker(ix.checkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ix.repair:
		case <-t.C:
			clear(tried) // try again what is still corrupt
		}
		ix.mu.Lock()
		todo := make(map[string]corruptKey, len(ix.corrupt))
		for k, c := range ix.corrupt {
			if tried[k] != c.rev {
				todo[k] = c
			}
		}
		ix.mu.Unlock()
		for k, c := range todo {
			tried[k] = c.rev
			if ix.bucket != nil {
				ix.bucket.ReportErr(ctx, k, c.rev, c.why)
			}
			_, id, err := ParseKey(k)
			if err != nil || ix.reprojector == nil {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, repairTimeout)
			switch err := ix.reprojector.Reproject(rctx, id); {
			case err == nil, ctx.Err() != nil:
			case errors.Is(err, ErrCorruptView):
				// The history does not make a view the readers accept:
				// projecting it again gives the same; it is reported
				// (above) and tried again only when the key changes.
				ix.logger.Warn("index: a view that does not validate cannot be projected again: its history does not make a valid view (amends quarantine list shows why); it stays out of the index until it changes",
					"record", id, "err", err)
			default:
				ix.logger.Warn("index: a view that does not validate could not be projected again; trying again later", "record", id, "err", err)
				delete(tried, k)
			}
			cancel()
		}
	}
}

// rebuildFromHistory returns record id's view made from its history, for
// a stored view that does not validate (Get), and asks for it to be
// projected again.
func (ix *Index) rebuildFromHistory(ctx context.Context, id string, cause error) (api.View, error) {
	ix.signalRepair()
	if ix.history == nil {
		return api.View{}, cause
	}
	streams, err := ix.history.Load(ctx, aggregate.RecordAggregate(id), 1)
	if err != nil {
		return api.View{}, errors.Join(cause, fmt.Errorf("and its history does not load: %w", err))
	}
	return replayView(id, streams)
}

// WithQuarantine sets where the projector records the messages it can
// never project (default: a quarantine.Quarantine on the projector's
// JetStream, with the compensation stream's replica count). Share one with
// the other consumers of a process to count them together.
func WithQuarantine(q *quarantine.Quarantine) ProjectorOption {
	return func(o *projectorOptions) error {
		if q == nil {
			return fmt.Errorf("quarantine is nil: %w", ErrInvalidOption)
		}
		o.quarantine = q
		return nil
	}
}

// WithRetry sets how a message that failed with an error that may be
// transient is redelivered and when it is quarantined instead (default:
// quarantine.DefaultRetry, starting at the nak delay).
func WithRetry(r quarantine.Retry) ProjectorOption {
	return func(o *projectorOptions) error {
		if r.First < 0 || r.Max < 0 {
			return fmt.Errorf("retry delays must not be negative, got first %s and max %s: %w", r.First, r.Max, ErrInvalidOption)
		}
		o.retry = r
		return nil
	}
}

// Quarantine returns where the projector records the messages it
// terminates.
func (p *Projector) Quarantine() *quarantine.Quarantine { return p.opts.quarantine }

func (o *projectorOptions) defaultQuarantine(js jetstream.JetStream, store eventstore.Store[jetstream.Msg]) error {
	if o.retry.First == 0 {
		o.retry.First = o.nakDelay
	}
	if o.quarantine != nil {
		return nil
	}
	replicas := max(store.Replicas(), 1)
	q, err := quarantine.New(js, quarantine.WithReplicas(replicas), quarantine.WithLogger(o.logger, 0))
	if err != nil {
		return fmt.Errorf("projector quarantine: %v: %w", err, ErrInvalidOption)
	}
	o.quarantine = q
	return nil
}
