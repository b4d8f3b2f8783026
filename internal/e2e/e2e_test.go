package e2e_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/fakeclock"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/scheduler"
)

const t0 = int64(1_735_000_000_000)

func run(tb testing.TB, r func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r(ctx); err != nil && ctx.Err() == nil {
			tb.Errorf("run: %v", err)
		}
	})
	tb.Cleanup(func() { cancel(); wg.Wait() })
}

// A function that fails twice and then succeeds: recorded on its first
// failure, replayed by the scheduler when the retry formula says, failed
// once more, replayed again and SUCCEEDED, all on one injected clock.
func TestFailTwiceThenSucceedThroughTheScheduler(t *testing.T) {
	js := natstest.New(t).JetStream()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	clk := fakeclock.At(t0)

	// The control plane: projection, index, command service, scheduler.
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(t, err)
	index, err := projection.NewIndex(views, store, projection.WithClock(clk))
	require.NoError(t, err)
	records := aggregate.NewService(store, aggregate.WithClock(clk))
	leases, err := scheduler.OpenLeases(t.Context(), js)
	require.NoError(t, err)
	ticks := make(chan time.Time)
	sched, err := scheduler.New(index, records, leases, scheduler.WithClock(clk), scheduler.WithTicks(ticks))
	require.NoError(t, err)
	run(t, proj.Run)
	run(t, index.Run)
	run(t, sched.Run)

	// The service: a function that fails on its first two calls.
	rec, err := recorder.New(records, recorder.WithClock(clk))
	require.NoError(t, err)
	proc, err := processor.New(js, store, "shop",
		processor.WithRecorder(rec), processor.WithRecords(records), processor.WithClock(clk),
		processor.WithImmediateRetry(processor.Retry{}))
	require.NoError(t, err)
	var calls atomic.Int32
	spec := aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 1, ExecutionTimeout: 10}
	require.NoError(t, proc.Register(processor.Function{Processor: "Billing", Name: "charge", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}},
		func(context.Context, *processor.Delivery) error {
			if calls.Add(1) <= 2 {
				return errGateway
			}
			return nil
		}, processor.RetrySpec(spec)))
	run(t, proc.Run)
	<-proc.Ready()

	st, err := store.Append(t.Context(), eventstore.Stream{
		ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}, CreateTime: t0,
		Events: []eventstore.Event{{ID: "evt-1", Name: "order_placed", Body: []byte(`{}`)}},
	}, 0)
	require.NoError(t, err)
	id := aggregate.RecordID("evt-1", aggregate.FunctionInfo{ContextName: "shop", ProcessorName: "Billing", Name: "charge"})

	view := func(version uint64) api.View {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		require.NoError(t, index.WaitFor(ctx, id, version), "record %s at version %d", id, version)
		v, err := index.Get(t.Context(), id)
		require.NoError(t, err)
		return v
	}
	pass := func(at int64) {
		t.Helper()
		clk.SetMillis(at)
		before := sched.Stats().Passes
		ticks <- time.UnixMilli(at)
		require.Eventually(t, func() bool { return sched.Stats().Passes > before }, 30*time.Second, time.Millisecond, "pass at %d", at)
	}

	// A tick while the scheduler does not hold the lease yet is idle, not a
	// pass: wait for the lease first.
	require.Eventually(t, func() bool { return sched.Stats().Active }, 30*time.Second, time.Millisecond, "the scheduler takes the lease")
	v := view(1)
	assert.Equal(t, aggregate.StatusFailed, v.State.Status)
	assert.Equal(t, st.Seq, v.State.EventID.Seq, "the record knows where the event is stored")
	assert.Equal(t, aggregate.RetryState{Retries: 0, RetryAt: t0, TimeoutAt: t0 + 10_000, NextRetryAt: t0 + 1_000}, v.State.RetryState,
		"created at t0: nextRetryAt = t0 + 1 s * 2^0")

	pass(t0 + 999) // not due yet
	assert.Equal(t, uint64(1), view(1).Version, "nothing prepared before nextRetryAt")

	pass(t0 + 1_000) // due: prepared, replayed, fails again
	v = view(3)
	assert.Equal(t, aggregate.StatusFailed, v.State.Status, "the first replay failed")
	assert.Equal(t, aggregate.RetryState{Retries: 1, RetryAt: t0 + 1_000, TimeoutAt: t0 + 11_000, NextRetryAt: t0 + 3_000}, v.State.RetryState,
		"prepared at t0+1s: nextRetryAt = t0+1s + 1 s * 2^1")

	pass(t0 + 2_999)
	assert.Equal(t, uint64(3), view(3).Version, "nothing prepared before the second nextRetryAt")

	pass(t0 + 3_000) // due again: prepared, replayed, succeeds
	v = view(5)
	assert.Equal(t, aggregate.StatusSucceeded, v.State.Status)
	assert.Equal(t, aggregate.RetryState{Retries: 2, RetryAt: t0 + 3_000, TimeoutAt: t0 + 13_000, NextRetryAt: t0 + 7_000}, v.State.RetryState,
		"prepared at t0+3s: nextRetryAt = t0+3s + 1 s * 2^2")
	assert.Equal(t, t0+3_000, v.State.ExecuteAt, "succeeded at the second replay")
	assert.Equal(t, int32(3), calls.Load(), "the function ran three times: the failure and two replays")

	history, err := index.History(t.Context(), id)
	require.NoError(t, err)
	var names []string
	for i := len(history) - 1; i >= 0; i-- {
		names = append(names, history[i].Stream.Events[0].Name+"/"+history[i].Stream.Headers[aggregate.HeaderActor])
	}
	assert.Equal(t, []string{
		"execution_failed_created/recorder", "compensation_prepared/scheduler", "execution_failed_applied/recorder",
		"compensation_prepared/scheduler", "execution_success_applied/recorder",
	}, names)
}

type gatewayError struct{}

func (gatewayError) Error() string { return "payment gateway unavailable" }

var errGateway = gatewayError{}
