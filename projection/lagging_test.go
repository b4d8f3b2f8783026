package projection_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
)

// noState stores streams without the record state a Service puts on
// them, as an older writer did, so the projector must rebuild views from
// the history.
type noState struct{ *jsstore.Store }

func (s noState) Append(ctx context.Context, st eventstore.Stream, expected uint64) (eventstore.Stream, error) {
	st.State = nil
	return s.Store.Append(ctx, st, expected)
}

// A view rebuilt from the history is the view as of the message being
// projected, read so that a replica which has not applied that message
// (here: one that has applied nothing) neither stalls the projector nor
// makes it write an older view.
func TestProjectorRebuildsFromALaggingReplica(t *testing.T) {
	e := newEnv(t)
	lag := e.srv.LaggingAPI()
	lag.Freeze()
	lagging, err := jsstore.New(lag.JetStream(), jsstore.WithAPIPrefix(natstest.LaggingAPIPrefix))
	require.NoError(t, err)
	p, err := projection.NewProjector(e.js, lagging, e.views)
	require.NoError(t, err)
	run(t, p)
	e.svc = aggregate.NewService(noState{e.store}, aggregate.WithClock(e.clock))

	id := e.create(t, evt(1), fnA, "Timeout", nil)
	e.waitViews(t, map[string]uint64{id: 1})
	require.NoError(t, e.views.Delete(t.Context(), keyOf(t, e.views, id))) // the next stream must rebuild it
	e.exec(t, id, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable})
	r := e.exec(t, id, aggregate.PrepareCompensation{})
	e.waitViews(t, map[string]uint64{id: r.Version})
	got, err := projection.GetView(t.Context(), e.views, id)
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusPrepared, got.State.Status)
	assert.Equal(t, aggregate.Recoverable, got.State.Recoverable)
	assert.Positive(t, p.Stats().Rebuilt, "the view was rebuilt from the history")
	assert.Positive(t, lagging.LaggingReads(), "the history was read past the lagging replica")
}

// A record's history, read for a viewer, is never older than the record
// the index shows, even when the replica answering the read lags.
func TestHistoryIsNotOlderThanTheIndex(t *testing.T) {
	e := newEnv(t)
	lag := e.srv.LaggingAPI()
	lagging, err := jsstore.New(lag.JetStream(), jsstore.WithAPIPrefix(natstest.LaggingAPIPrefix))
	require.NoError(t, err)
	run(t, e.projector(t))
	ix, err := projection.NewIndex(e.views, lagging, projection.WithClock(e.clock))
	require.NoError(t, err)
	run(t, ix)

	id := e.create(t, evt(1), fnA, "Timeout", nil)
	require.NoError(t, ix.WaitFor(t.Context(), id, 1))
	h, err := ix.History(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, h, 1)
	lag.Freeze() // the replica stays at version 1
	r := e.exec(t, id, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable})
	require.NoError(t, ix.WaitFor(t.Context(), id, r.Version))

	h, err = ix.History(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, h, 2, "the history holds the version the index shows")
	assert.Equal(t, r.Version, h[0].Stream.Version)

	other := e.create(t, evt(2), fnA, "Timeout", nil) // never seen by the replica
	require.NoError(t, ix.WaitFor(t.Context(), other, 1))
	h, err = ix.History(t.Context(), other)
	require.NoError(t, err, "a record the replica lacks is read from the leader")
	assert.Len(t, h, 1)
}
