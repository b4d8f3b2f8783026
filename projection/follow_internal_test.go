package projection

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
)

// The watch moves the index's now to the clock's while no query asks, so
// a record whose attempt timed out meanwhile is in its timed-out cell
// before the next query (the cells' moves: package index's tests).
func TestIndexNowFollowsTheClock(t *testing.T) {
	js := natstest.New(t).JetStream()
	views, err := OpenViews(t.Context(), js)
	require.NoError(t, err)
	const t0 = base
	clock := fakeclock.At(t0)
	v := api.View{State: aggregate.State{
		ID:         "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		EventID:    aggregate.EventID{ID: "e1", AggregateID: aggregate.WireAggregateID{ContextName: "c", AggregateName: "a", AggregateID: "1", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:   aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "svc", ProcessorName: "P", Name: "f"},
		ExecuteAt:  t0,
		RetrySpec:  aggregate.RetrySpec{MaxRetries: 3},
		RetryState: aggregate.RetryState{Retries: 1, RetryAt: t0, TimeoutAt: t0 + 1000, NextRetryAt: t0 + 5000},
		Status:     aggregate.StatusPrepared, Recoverable: aggregate.Recoverable,
	}, Version: 1}
	data, err := encodeView(&v)
	require.NoError(t, err)
	key, err := ViewKey(v.State.Function.ProcessorName, v.State.ID)
	require.NoError(t, err)
	_, err = views.Put(t.Context(), key, data)
	require.NoError(t, err)

	ix, err := NewIndex(views, nil, WithClock(clock))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	select {
	case <-ix.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the index did not load the bucket within 30 s")
	}
	require.Equal(t, time.UnixMilli(t0), ix.Now())
	n, err := ix.Count(api.Filter{View: aggregate.ViewExecuting, Now: time.UnixMilli(t0)})
	require.NoError(t, err)
	require.Equal(t, 1, n, "executing at t0")

	clock.SetMillis(t0 + 2000) // past the timeout, before the next retry
	require.Eventually(t, func() bool { return ix.Now().Equal(time.UnixMilli(t0 + 2000)) }, 30*time.Second, 20*time.Millisecond,
		"the index's now follows the clock without a query")
	n, err = ix.Count(api.Filter{View: aggregate.ViewExecuting})
	require.NoError(t, err)
	require.Zero(t, n, "a timed-out attempt is not executing")
}
