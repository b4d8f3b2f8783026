package projection_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/projection"
)

// lifecycle runs a record through every kind of command and returns its
// id and final version.
func lifecycle(t *testing.T, e *env, i int) (string, uint64) {
	t.Helper()
	id := e.create(t, evt(i), fnA, "Timeout", &aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 1, ExecutionTimeout: 10})
	e.exec(t, id, aggregate.ForcePrepareCompensation{})
	e.exec(t, id, aggregate.ApplyExecutionFailed{Error: aggregate.ErrorDetails{ErrorCode: "Again"}, ExecuteAt: t0.UnixMilli() + 1, Recoverable: aggregate.Recoverable})
	e.exec(t, id, aggregate.ApplyRetrySpec{MaxRetries: 7, MinBackoff: 2, ExecutionTimeout: 20})
	e.exec(t, id, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable})
	r := e.exec(t, id, aggregate.ChangeFunction{FunctionKind: aggregate.KindStateEvent, ContextName: "c2", ProcessorName: "p2", Name: "n2"})
	return id, r.Version
}

// assertViewsMatchAggregate checks each view against the aggregate's own
// state of the record.
func assertViewsMatchAggregate(t *testing.T, e *env, want map[string]uint64) {
	t.Helper()
	e.waitViews(t, want)
	for id := range want {
		v, err := projection.GetView(t.Context(), e.views, id)
		require.NoError(t, err)
		s, version, err := e.svc.Get(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, s, v.State, "view of %s", id)
		assert.Equal(t, version, v.Version, "version of %s", id)
		assert.NotZero(t, v.Seq, "seq of %s", id)
		assert.Equal(t, t0.UnixMilli(), v.UpdatedAt, "updatedAt of %s", id)
	}
}

func TestProjectorAppliesEveryEventKind(t *testing.T) {
	e := newEnv(t)
	p := e.projector(t)
	run(t, p)
	want := map[string]uint64{}
	for i := range 3 {
		id, v := lifecycle(t, e, i)
		want[id] = v
	}
	assertViewsMatchAggregate(t, e, want)
	st := handled(t, p, 18)
	assert.Equal(t, uint64(18), st.Projected, "every stream applied with Evolve")
	assert.Zero(t, st.Rebuilt)
}

func TestProjectorResumesWhereItStopped(t *testing.T) {
	e := newEnv(t)
	first := e.projector(t)
	stop := run(t, first)
	want := map[string]uint64{}
	for i := range 5 {
		want[e.create(t, evt(i), fnA, "E", nil)] = 1
	}
	e.waitViews(t, want)
	e.drained(t) // and acked, so the second projector gets none of these
	stop()

	for i := 5; i < 10; i++ {
		want[e.create(t, evt(i), fnA, "E", nil)] = 1
	}
	id := aggregate.RecordID(evt(0), fnA)
	e.exec(t, id, aggregate.PrepareCompensation{})
	want[id] = 2

	second := e.projector(t)
	run(t, second)
	assertViewsMatchAggregate(t, e, want)
	st := handled(t, second, 6)
	assert.Equal(t, uint64(6), st.Projected+st.Skipped+st.Rebuilt, "the second projector sees only the 6 new streams: %+v", st)
	assert.Equal(t, uint64(6), st.Projected)
}

func TestProjectorRebuildsAMissingView(t *testing.T) {
	e := newEnv(t)
	p := e.projector(t)
	run(t, p)
	id, v := lifecycle(t, e, 1)
	e.waitViews(t, map[string]uint64{id: v})

	require.NoError(t, e.views.Delete(t.Context(), keyOf(t, e.views, id)))
	r := e.exec(t, id, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable})
	assertViewsMatchAggregate(t, e, map[string]uint64{id: r.Version})
	assert.Equal(t, uint64(1), handled(t, p, 7).Rebuilt, "rebuilt from the state the stream carries")
}

func TestProjectorTerminatesCorruptMessages(t *testing.T) {
	e := newEnv(t)
	p := e.projector(t)
	run(t, p)
	require.NoError(t, e.store.Provision(t.Context(), aggregate.Context))
	_, err := e.js.PublishMsg(t.Context(), &nats.Msg{Subject: "amends.compensation.execution_failed.bogus", Data: []byte("not json")})
	require.NoError(t, err)
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})
	require.Eventually(t, func() bool { return p.Stats().Corrupt == 1 }, 30*time.Second, 5*time.Millisecond, "the corrupt message is counted")
	info, err := e.js.Consumer(t.Context(), e.store.StreamName(aggregate.Context), projection.DefaultDurable)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ci, err := info.Info(t.Context())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, 30*time.Second, 5*time.Millisecond, "nothing left pending: the corrupt message was terminated, not redelivered")
}

func TestProjectorsShareTheWork(t *testing.T) {
	e := newEnv(t)
	a, b := e.projector(t, projection.WithWorkers(2)), e.projector(t, projection.WithWorkers(3))
	run(t, a)
	run(t, b)
	want := map[string]uint64{}
	for i := range 20 {
		id, v := lifecycle(t, e, i)
		want[id] = v
	}
	assertViewsMatchAggregate(t, e, want)
	var sa, sb projection.ProjectorStats
	require.Eventually(t, func() bool {
		sa, sb = a.Stats(), b.Stats()
		return sa.Projected+sa.Rebuilt+sa.Skipped+sb.Projected+sb.Rebuilt+sb.Skipped >= 120
	}, 30*time.Second, 5*time.Millisecond, "the projectors counted every stream")
	assert.Equal(t, uint64(120), sa.Projected+sa.Rebuilt+sa.Skipped+sb.Projected+sb.Rebuilt+sb.Skipped, "every stream handled once: %+v %+v", sa, sb)
}

func TestProjectorCountsEventsOnce(t *testing.T) {
	e := newEnv(t)
	p := e.projector(t)
	run(t, p)
	id := e.create(t, evt(1), fnA, "Timeout", nil)
	e.exec(t, id, aggregate.PrepareCompensation{})
	r := e.exec(t, id, aggregate.ApplyExecutionSuccess{ExecuteAt: e.clock.Now().UnixMilli()})
	e.waitViews(t, map[string]uint64{id: r.Version})
	ev := handled(t, p, 3).Events
	assert.Equal(t, uint64(1), ev[aggregate.NameExecutionFailedCreated])
	assert.Equal(t, uint64(1), ev[aggregate.NameCompensationPrepared])
	assert.Equal(t, uint64(1), ev[aggregate.NameExecutionSuccessApplied])
	assert.Zero(t, ev[aggregate.NameExecutionFailedApplied])
}
