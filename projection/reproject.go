package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/kvstore"
)

// Reprojector projects a record's view again from the record's history:
// a view that does not validate, or that the index or the scheduler found
// wrong (ahead of its record, of a record that does not exist), is
// replaced or deleted. *Projector satisfies it.
type Reprojector interface {
	Reproject(ctx context.Context, id string) error
}

var _ Reprojector = (*Projector)(nil)

// viewsSpec is the views bucket as the KV layer sees it (OpenViews has
// its settings).
var viewsSpec = kvstore.Spec{MaxValue: 1 << 20}

// Reproject brings the view of record id back to the record's history:
// it rebuilds the view from the whole history in the event store and
// writes it over whatever the bucket holds (compare-and-set on what it
// read), or deletes the view if the record has no history (a view of a
// record that does not exist). A stored view that agrees with the rebuilt
// one on everything that steers work (viewDiff) is left as it is. What it replaces is reported to the quarantine (bucket,
// key, revision, reason). A write that loses a race (another projector
// wrote meanwhile) is not an error: that writer's view is at least as
// recent. Errors: ErrInvalidQuery for an id that cannot be a record id,
// ErrCorruptView for a history that does not make a view, the store's or
// the bucket's. Safe for concurrent use.
func (p *Projector) Reproject(ctx context.Context, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	stored, at, why, err := p.lookup(ctx, id) // why: the stored view's refusal
	if err != nil {
		return err
	}
	streams, err := p.store.Load(ctx, aggregate.RecordAggregate(id), 1)
	if errors.Is(err, eventstore.ErrNotFound) {
		return p.deleteOrphan(ctx, id, at)
	}
	if err != nil {
		return fmt.Errorf("load the history of record %s: %w", id, err)
	}
	v, err := replayView(id, streams)
	if err != nil {
		return err
	}
	var field, differs string
	if stored != nil {
		if field, differs = viewDiff(stored, &v); field == "" {
			return nil // it is the record's view
		}
	}
	switch {
	case why != nil:
		p.bucket.ReportErr(ctx, at.key, at.rev, why)
	case stored != nil:
		p.bucket.Report(ctx, at.key, at.rev, field, differs+"; it is projected again from the history")
	}
	if err := p.write(ctx, id, at, &v); err != nil && !errors.Is(err, errLostRace) {
		return err
	}
	return nil
}

// deleteOrphan deletes the view of record id, at at, whose history is
// empty (a view of a record that does not exist), and reports it.
func (p *Projector) deleteOrphan(ctx context.Context, id string, at place) error {
	if at.key == "" || at.gone {
		return nil
	}
	p.bucket.Report(ctx, at.key, at.rev, "state.id", fmt.Sprintf("no record %s exists (its history is empty); the view is deleted", kvstore.Quote(id)))
	if err := p.views.Delete(ctx, at.key, jetstream.LastRevision(at.rev)); err != nil && !kvstore.IsConflict(err) {
		return fmt.Errorf("delete the view of record %s, which does not exist: %w", id, err)
	}
	p.cache.drop(id)
	return nil
}

// rebuildLatest returns the view of st's record after its whole history:
// the view that replaces a stored one that does not validate or is ahead
// of the record, whatever st's own version.
func (p *Projector) rebuildLatest(ctx context.Context, st *eventstore.Stream) (api.View, error) {
	streams, err := p.store.Load(ctx, st.Aggregate, 1)
	if err != nil {
		return api.View{}, fmt.Errorf("load the history of record %s: %w", st.Aggregate.ID, err)
	}
	return replayView(st.Aggregate.ID, streams)
}

// viewDiff returns the first field that steers work (version, sequence,
// status, recoverability, retries, times, retry spec, function) in which
// stored differs from v, the view of the record's history, and says how;
// "" if they agree on all of them. Fields only shown (the error's text,
// when the view was written) are not compared: a view that differs there
// only is shown as it is.
func viewDiff(stored, v *api.View) (field, how string) {
	s, h := &stored.State, &v.State
	differ := func(field string, stored, history any) (string, string) {
		return field, fmt.Sprintf("the stored view's %s is %v, its history's %v", field, stored, history)
	}
	switch {
	case stored.Version != v.Version || stored.Seq != v.Seq:
		return "version", fmt.Sprintf("the stored view is at version %d (sequence %d), the record's history at %d (sequence %d)",
			stored.Version, stored.Seq, v.Version, v.Seq)
	case s.Status != h.Status:
		return differ("status", s.Status, h.Status)
	case s.Recoverable != h.Recoverable:
		return differ("recoverable", s.Recoverable, h.Recoverable)
	case s.RetryState != h.RetryState:
		return differ("retryState", s.RetryState, h.RetryState)
	case s.RetrySpec != h.RetrySpec:
		return differ("retrySpec", s.RetrySpec, h.RetrySpec)
	case s.ExecuteAt != h.ExecuteAt:
		return differ("executeAt", s.ExecuteAt, h.ExecuteAt)
	case s.Function != h.Function:
		return differ("function", s.Function, h.Function)
	case s.EventID != h.EventID:
		return differ("eventId", s.EventID, h.EventID)
	case s.PreparedVersion != h.PreparedVersion:
		return differ("preparedVersion", s.PreparedVersion, h.PreparedVersion)
	}
	return "", ""
}
