package jsstore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// laggingStore returns a store reading through a lagging replica, and a
// store on the same server reading JetStream directly.
func laggingStore(tb testing.TB) (lagging, direct *jsstore.Store, lag *natstest.LaggingAPI) {
	tb.Helper()
	srv := natstest.New(tb)
	lag = srv.LaggingAPI()
	lagging, err := jsstore.New(lag.JetStream(), jsstore.WithAPIPrefix(natstest.LaggingAPIPrefix))
	require.NoError(tb, err)
	require.NoError(tb, lagging.Provision(tb.Context(), "orders"))
	direct, err = jsstore.New(srv.JetStream())
	require.NoError(tb, err)
	require.NoError(tb, direct.Provision(tb.Context(), "orders"))
	return lagging, direct, lag
}

// A store never reads back behind what it wrote or read itself, however
// far the replica that answers lags.
func TestLaggingReplicaNeverTakesAStoreBackBehindItsOwnWrites(t *testing.T) {
	st, _, lag := laggingStore(t)
	a := order("own")
	appendN(t, st, a, 0, 2)
	_, err := st.LoadLast(t.Context(), a) // the replica answers version 2
	require.NoError(t, err)
	lag.Freeze()
	committed := appendN(t, st, a, 2, 3) // versions 3 to 5, which the replica never sees

	last, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), last.Version, "LoadLast went back to the replica's version")

	got, changed, err := st.LoadLastIfChanged(t.Context(), a, committed[2].Seq)
	require.NoError(t, err)
	assert.False(t, changed, "an older answer than the known sequence is no change")
	assert.Zero(t, got.Version)

	all, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err, "versions the replica lacks are read from the leader, not reported corrupt")
	assert.Equal(t, seq(1, 5), versions(all))

	v4, err := st.LoadVersion(t.Context(), a, 4)
	require.NoError(t, err)
	assert.Equal(t, committed[1].Seq, v4.Seq)

	got4, err := st.GetSeq(t.Context(), "orders", committed[1].Seq)
	require.NoError(t, err, "a message the replica lacks is found on the leader")
	assert.Equal(t, uint64(4), got4.Version)

	assert.Positive(t, lag.Served(), "the frozen replica answered")
	assert.Positive(t, st.LaggingReads(), "the store noticed the lag")
}

// A write by another process is invisible on the lagging replica; the
// leader has it, and LoadLastFromLeader reads it there.
func TestLoadLastFromLeaderSeesWhatTheReplicaLacks(t *testing.T) {
	st, other, lag := laggingStore(t)
	a := order("theirs")
	appendN(t, other, a, 0, 1)
	_, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	lag.Freeze()
	appendN(t, other, a, 1, 2)

	stale, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), stale.Version, "the replica lags: without a known position the store cannot tell")

	fresh, err := st.LoadLastFromLeader(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), fresh.Version)
	again, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), again.Version, "once the leader's position is known, the replica's older answer is not taken")

	_, err = st.LoadLastFromLeader(t.Context(), order("missing"))
	require.ErrorIs(t, err, eventstore.ErrNotFound)
}

// An append at a version the lagging replica still shows loses to the
// leader's newer stream: a conflict, never a lost write.
func TestAppendOnALaggingReplicaConflicts(t *testing.T) {
	st, other, lag := laggingStore(t)
	a := order("race")
	appendN(t, other, a, 0, 1)
	_, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	lag.Freeze()
	appendN(t, other, a, 1, 1)

	_, err = st.Append(t.Context(), newStream(a, "late", map[string]int{}), 1)
	require.ErrorIs(t, err, eventstore.ErrConflict)
	last, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), last.Version, "the conflict taught the store the leader's position")
}

// A long history is read with batch gets, which a replica may answer
// before it has applied the aggregate's last streams: the read resumes
// where the replica stopped instead of calling the history corrupt.
func TestLongHistoryFromALaggingReplicaResumes(t *testing.T) {
	st, _, lag := laggingStore(t)
	a := order("long")
	committed := appendN(t, st, a, 0, 40) // more than the previous-sequence header lists
	lag.CutNextBatch(committed[24].Seq)
	all, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	assert.Equal(t, seq(1, 40), versions(all))
	assert.Positive(t, lag.Served(), "the cut batch was served")
	assert.Positive(t, st.LaggingReads(), "the store noticed the short batch")
}

// Commands of a Service whose reads come from a lagging replica: a
// rejection or a missing record is only reported once the stream leader
// agrees, so neither comes from the replica's older state.
func TestServiceDecidesOnTheLeaderBeforeRejecting(t *testing.T) {
	st, other, lag := laggingStore(t)
	require.NoError(t, st.Provision(t.Context(), aggregate.Context))
	require.NoError(t, other.Provision(t.Context(), aggregate.Context))
	writer, reader := aggregate.NewService(other), aggregate.NewService(st)
	create := func(id string) { createRecord(t, writer, id) }
	create("seen")
	_, _, err := reader.Get(t.Context(), "seen") // the replica has it FAILED
	require.NoError(t, err)
	lag.Freeze()

	prepared, err := writer.Execute(t.Context(), "seen", aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	_, err = reader.Execute(t.Context(), "seen", aggregate.ApplyExecutionSuccess{
		ExecuteAt: 1735000000001, Attempt: prepared.State.Attempt(), PreparedVersion: prepared.Version,
	}, aggregate.Meta{})
	require.NoError(t, err, "the replica's FAILED state made a final 'not prepared' rejection")

	create("unseen") // after the freeze: the replica has never heard of it
	_, err = reader.Execute(t.Context(), "unseen", aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err, "the replica's 'not found' was reported as final")
	state, v, err := reader.Get(t.Context(), "unseen")
	require.NoError(t, err, "Get after an acknowledged prepare")
	assert.Equal(t, uint64(2), v, "Get read its own write")
	assert.Equal(t, aggregate.StatusPrepared, state.Status)

	create("other")
	_, v, err = reader.Get(t.Context(), "other")
	require.NoError(t, err, "a record missing on the replica is looked up on the leader")
	assert.Equal(t, uint64(1), v)

	// A genuine rejection is still one: the leader agrees.
	_, err = reader.Execute(t.Context(), "seen", aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.ErrorIs(t, err, aggregate.ErrIllegalState)
	_, err = reader.Execute(t.Context(), "nobody", aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.ErrorIs(t, err, aggregate.ErrNotFound)
}

// A consumer may deliver a message before the stream leader has applied
// it. GetAtLeast, given the version such a message shows, asks the leader
// again for a moment; if the leader still lags, it returns what it has,
// and the caller sees that the version is below the one it knows.
func TestGetAtLeastWaitsForTheLeaderToApply(t *testing.T) {
	st, other, lag := laggingStore(t)
	require.NoError(t, st.Provision(t.Context(), aggregate.Context))
	require.NoError(t, other.Provision(t.Context(), aggregate.Context))
	writer, reader := aggregate.NewService(other), aggregate.NewService(st)
	createRecord(t, writer, "r")
	_, err := st.LoadLastFromLeader(t.Context(), aggregate.RecordAggregate("r")) // the leader's answer at version 1
	require.NoError(t, err)
	_, _, err = reader.Get(t.Context(), "r")
	require.NoError(t, err)
	lag.Freeze()
	_, err = writer.Execute(t.Context(), "r", aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)

	lag.LeaderLags(2)
	state, v, err := reader.GetAtLeast(t.Context(), "r", 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), v, "the leader was asked again until it had applied version 2")
	assert.Equal(t, aggregate.StatusPrepared, state.Status)

	_, err = writer.Execute(t.Context(), "r", aggregate.ApplyExecutionSuccess{ExecuteAt: 1735000000001, Attempt: 1, PreparedVersion: 2}, aggregate.Meta{})
	require.NoError(t, err)
	lag.LeaderLags(1000)
	_, v, err = reader.GetAtLeast(t.Context(), "r", 3)
	require.NoError(t, err)
	assert.Less(t, v, uint64(3), "a leader that keeps lagging: the version returned is below the one asked for")
}

// createRecord records a failure as record id through svc.
func createRecord(t *testing.T, svc *aggregate.Service, id string) {
	t.Helper()
	_, err := svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: "evt-" + id, AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: "o-" + id, TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:  aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "orders", ProcessorName: "Mailer", Name: "onOrderPlaced"},
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"},
		ExecuteAt: 1735000000000,
	}, aggregate.Meta{})
	require.NoError(t, err)
}
