package projection_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

// answers collects what an index says to a spread of queries: every sort,
// every view, some filters (paged with a small limit, so cursors are
// used), counts, the summary and the due list at several instants.
func answers(t *testing.T, ix *projection.Index) map[string]any {
	t.Helper()
	out := map[string]any{}
	list := func(name string, q api.Query) {
		q.Limit = 7
		var items []api.Item
		for {
			p, err := ix.List(q)
			require.NoError(t, err, name)
			items = append(items, p.Items...)
			if p.Next == "" {
				break
			}
			q.Cursor = p.Next
		}
		out["list "+name] = items
		n, err := ix.Count(q.Filter)
		require.NoError(t, err)
		out["count "+name] = n
	}
	for _, f := range api.SortFields {
		for _, desc := range []bool{false, true} {
			list(fmt.Sprintf("all by %s desc=%v", f, desc), api.Query{Sort: api.Sort{Field: f, Desc: desc}})
		}
	}
	for _, now := range []time.Time{t0, t0.Add(2 * time.Second), t0.Add(time.Hour)} {
		for _, v := range aggregate.Views {
			list(fmt.Sprintf("%s at %d", v, now.UnixMilli()), api.Query{Filter: api.Filter{View: v, Now: now}})
		}
		out[fmt.Sprintf("due at %d", now.UnixMilli())] = ix.Due(now, 1000)
		s, err := ix.Summary(api.Filter{Now: now})
		require.NoError(t, err)
		out[fmt.Sprintf("summary at %d", now.UnixMilli())] = s
	}
	for name, f := range map[string]api.Filter{
		"processor":  {Processor: fnA.ProcessorName},
		"changed fn": {FunctionContext: "c2", Processor: "p2", Function: "n2", FunctionKind: aggregate.KindStateEvent},
		"status":     {Status: aggregate.StatusFailed, Recoverable: aggregate.Recoverable},
		"error code": {ErrorCode: "Again"},
		"retries":    {MinRetries: 1},
		"aggregate":  {AggregateContext: "order", AggregateType: "order", AggregateID: "o-" + evt(3)},
		"event":      {EventID: evt(5)},
		"executeAt":  {ExecuteAtFrom: t0, ExecuteAtTo: t0.Add(time.Millisecond)},
	} {
		list(name, api.Query{Filter: f, Sort: api.Sort{Field: api.SortRetries, Desc: true}})
	}
	return out
}

// populate creates records in every state of the selection table plus
// full lifecycles, and waits until ix has all of them.
func populate(t *testing.T, e *env, ix *projection.Index, from, n int) {
	t.Helper()
	want := map[string]uint64{}
	for i := from; i < from+n; i++ {
		var id string
		if i%5 == 0 {
			id, _ = lifecycle(t, e, i)
		} else {
			id = rows()[i%len(rows())].build(t, e, i)
		}
		_, v, err := e.svc.Get(t.Context(), id)
		require.NoError(t, err)
		want[id] = v
	}
	for id, v := range want {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		require.NoError(t, ix.WaitFor(ctx, id, v))
		cancel()
	}
}

func TestIndexRebuiltAfterRestartAnswersLikeTheLiveOne(t *testing.T) {
	e := newEnv(t)
	stopProjector := run(t, e.projector(t))
	live := e.index(t)
	stopLive := run(t, live)
	populate(t, e, live, 0, 80)
	want := answers(t, live)
	e.drained(t) // every stream acked before the restart
	stopLive()
	stopProjector()

	e.srv = e.srv.Restart()
	e.connect(t)
	rebuilt := e.index(t)
	run(t, rebuilt)
	select {
	case <-rebuilt.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the rebuilt index is not ready")
	}
	assert.Equal(t, live.Len(), rebuilt.Len())
	assert.Equal(t, want, answers(t, rebuilt), "the rebuilt index answers like the live one")

	// The projector resumes after the restart with the commands it has not
	// seen, and the rebuilt index follows.
	p := e.projector(t)
	run(t, p)
	populate(t, e, rebuilt, 80, 10)
	st := handled(t, p, uint64(len(streamsSince(t, e, 80))))
	assert.Equal(t, st.Projected+st.Rebuilt+st.Skipped, uint64(len(streamsSince(t, e, 80))), "only the new streams: %+v", st)
}

// streamsSince lists the streams of the records populate made from index
// from on.
func streamsSince(t *testing.T, e *env, from int) []uint64 {
	t.Helper()
	var out []uint64
	for i := from; i < from+10; i++ {
		fn := fnA
		id := aggregate.RecordID(evt(i), fn)
		_, v, err := e.svc.Get(t.Context(), id)
		require.NoError(t, err)
		for k := uint64(1); k <= v; k++ {
			out = append(out, k)
		}
	}
	return out
}

func TestWaitForReadsYourOwnWrite(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	ix := e.index(t)
	run(t, ix)
	id := e.create(t, evt(1), fnA, "E", nil)
	r := e.exec(t, id, aggregate.ForcePrepareCompensation{})
	require.NoError(t, ix.WaitFor(t.Context(), id, r.Version))
	p, err := ix.List(api.Query{Filter: api.Filter{ID: id}})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	assert.Equal(t, aggregate.StatusPrepared, p.Items[0].Status, "the write is visible")
	assert.Equal(t, r.Version, p.Items[0].Version)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, ix.WaitFor(ctx, id, r.Version+1), context.Canceled, "a version that never comes")
}

func TestGetAndHistory(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	ix := e.index(t)
	run(t, ix)
	id, v := lifecycle(t, e, 1)
	require.NoError(t, ix.WaitFor(t.Context(), id, v))

	got, err := ix.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, v, got.Version)
	assert.Equal(t, "Again", got.State.Error.ErrorCode, "Get has the full record")

	h, err := ix.History(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, h, int(v))
	for i, c := range h {
		assert.Equal(t, v-uint64(i), c.Stream.Version, "newest first")
	}
	assert.IsType(t, aggregate.FunctionChanged{}, h[0].Events[0])
	assert.IsType(t, aggregate.ExecutionFailedCreated{}, h[len(h)-1].Events[0])
	assert.Equal(t, "test", h[0].Stream.Headers[aggregate.HeaderActor])

	_, err = ix.Get(t.Context(), "missing")
	assert.ErrorIs(t, err, projection.ErrNotFound)
	_, err = ix.History(t.Context(), "missing")
	assert.ErrorIs(t, err, projection.ErrNotFound)
}

func TestSummaryGroupsFailures(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	ix := e.index(t)
	run(t, ix)
	fnB := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "pay", ProcessorName: "PaySaga", Name: "onPaid"}
	spec := &aggregate.RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1}
	want := map[string]uint64{}
	for i := range 3 {
		want[e.create(t, evt(i), fnA, "Timeout", spec)] = 1
	}
	e.clock.Set(t0.Add(time.Minute))
	last := e.create(t, evt(3), fnA, "Timeout", spec)
	want[last] = e.exec(t, last, aggregate.PrepareCompensation{}).Version // prepared, now exhausted
	b := e.create(t, evt(4), fnB, "Closed", spec)
	e.exec(t, b, aggregate.PrepareCompensation{})
	want[b] = e.exec(t, b, aggregate.ApplyExecutionSuccess{ExecuteAt: t0.Add(time.Minute).UnixMilli()}).Version
	for id, v := range want {
		require.NoError(t, ix.WaitFor(t.Context(), id, v))
	}

	s, err := ix.Summary(api.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 5, s.Total)
	require.Len(t, s.Groups, 2)
	assert.Equal(t, api.FailureGroup{
		FunctionContext: "order", Processor: "OrderProjector", Function: "onEvent", ErrorCode: "Timeout",
		Total: 4, Retryable: 3, Exhausted: 1, Prepared: 1,
		OldestFailureAt: t0.UnixMilli(), NewestFailureAt: t0.Add(time.Minute).UnixMilli(),
	}, s.Groups[0])
	assert.Equal(t, api.FailureGroup{FunctionContext: "pay", Processor: "PaySaga", Function: "onPaid", ErrorCode: "Closed", Total: 1}, s.Groups[1])
	assert.Equal(t, []api.StatusCount{
		{Status: aggregate.StatusFailed, Recoverable: aggregate.RecoverabilityUnknown, Count: 3},
		{Status: aggregate.StatusPrepared, Recoverable: aggregate.RecoverabilityUnknown, Count: 1},
		{Status: aggregate.StatusSucceeded, Recoverable: aggregate.RecoverabilityUnknown, Count: 1},
	}, s.ByStatus)
	assert.Equal(t, 1, s.Views[aggregate.ViewSucceeded])
}

// An index started while views are written counts as loaded only with
// every record in: a KV watch's own end-of-initial-values signal comes
// early then, and the index was ready without the records being written.
func TestIndexReadyWhileViewsAreWrittenHoldsEveryRecord(t *testing.T) {
	e := newEnv(t)
	stopProjector := run(t, e.projector(t))
	want := map[string]uint64{}
	for i := range 20 {
		want[e.create(t, evt(i), fnA, "Timeout", nil)] = 1
	}
	e.waitViews(t, want)
	stopProjector()
	ctx, cancel := context.WithCancel(t.Context())
	var writers sync.WaitGroup
	n := 0
	for id := range want {
		if n++; n > 5 {
			break
		}
		key := keyOf(t, e.views, id)
		kve, err := e.views.Get(t.Context(), key)
		require.NoError(t, err)
		writers.Go(func() {
			for ctx.Err() == nil {
				_, _ = e.views.Put(ctx, key, kve.Value()) // the same view again, as a redelivery would
			}
		})
	}
	defer func() { cancel(); writers.Wait() }()
	for range 10 {
		ix := e.index(t)
		stop := run(t, ix)
		select {
		case <-ix.Ready():
		case <-time.After(30 * time.Second):
			t.Fatal("the index is not ready")
		}
		got := ix.Len()
		stop()
		require.Equal(t, len(want), got, "records in the index when it became ready")
	}
}
