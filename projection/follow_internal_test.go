package projection

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
)

// The watch moves the index's now to the clock's while no query asks, so
// a record whose attempt timed out meanwhile is in its timed-out cell
// before the next query.
func TestIndexNowFollowsTheClock(t *testing.T) {
	js := natstest.New(t).JetStream()
	views, err := OpenViews(t.Context(), js)
	require.NoError(t, err)
	const t0 = base
	clock := fakeclock.At(t0)
	v := View{State: aggregate.State{
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
	key, err := EncodeKey(v.State.ID)
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
	cellNow := func() (int64, uint8, int) {
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		slot, ok := ix.slotOf(packID(v.State.ID))
		require.True(t, ok)
		return ix.cursor, ix.slots.at(slot).cell, ix.counts.ahead.n
	}
	cur, cell, ahead := cellNow()
	require.Equal(t, int64(t0), cur)
	require.Zero(t, int(cell)&comboTimedOut, "not timed out at t0")
	require.Equal(t, 1, ahead, "its timeout is ahead")

	clock.SetMillis(t0 + 2000) // past the timeout, before the next retry
	require.Eventually(t, func() bool { cur, _, _ := cellNow(); return cur == t0+2000 }, 30*time.Second, 20*time.Millisecond,
		"the index's now follows the clock without a query")
	_, cell, ahead = cellNow()
	require.NotZero(t, int(cell)&comboTimedOut, "timed out at t0+2s")
	require.Zero(t, int(cell)&comboNextDue, "its next retry is not due yet")
	require.Equal(t, 1, ahead, "its next retry is ahead")
	n, err := ix.Count(Filter{View: aggregate.ViewExecuting})
	require.NoError(t, err)
	require.Zero(t, n, "a timed-out attempt is not executing")
}
