package processor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
)

// The processor tells the recorder when each attempt started and which
// instance and build ran it: the first failure and each replay get their
// own run in the record's history.
func TestAttemptsCarryTheirStartInstanceAndBuild(t *testing.T) {
	e := newEnv(t)
	reg, err := processor.OpenBuildRegistry(t.Context(), e.js, "", 0, 1)
	require.NoError(t, err)
	build := processor.Build{Version: "v1.2.3", Revision: "abc123"}
	p := e.processor(processor.WithBuildRegistry(reg, build))
	var (
		mu     sync.Mutex
		starts []int64
	)
	var fail atomic.Bool
	fail.Store(true)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), func(ctx context.Context, d *processor.Delivery) error {
		now := e.clock.Now().UnixMilli()
		mu.Lock()
		starts = append(starts, now)
		mu.Unlock()
		e.clock.SetMillis(now + 25) // the call takes 25 ms
		if fail.Load() {
			return errors.New("smtp down")
		}
		return nil
	}))
	run(t, p)

	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	evt := st.Events[0].ID
	f := info("Mailer", "onPlaced")
	id := aggregate.RecordID(evt, f)
	require.Eventually(t, func() bool { return e.record(evt, f).Status == aggregate.StatusFailed }, waitFor, tick)

	e.clock.SetMillis(t0 + 10_000)
	e.prepare(id, true)
	require.Eventually(t, func() bool {
		s := e.record(evt, f)
		return s.Status == aggregate.StatusFailed && s.Attempt() == 1
	}, waitFor, tick)
	fail.Store(false)
	e.clock.SetMillis(t0 + 20_000)
	e.prepare(id, true)
	require.Eventually(t, func() bool { return e.record(evt, f).Status == aggregate.StatusSucceeded }, waitFor, tick)

	streams, err := e.store.Load(context.Background(), aggregate.RecordAggregate(id), 1)
	require.NoError(t, err)
	steps, err := aggregate.StepsOf(streams)
	require.NoError(t, err)
	tl := aggregate.Timeline(steps)
	require.Len(t, tl, 3, "a first failure and two replays: %+v", tl)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, 3, "one call per attempt")
	for i, want := range []string{aggregate.AttemptFailed, aggregate.AttemptFailed, aggregate.AttemptSucceeded} {
		a := tl[i]
		assert.Equal(t, want, a.Outcome, "attempt %d", i)
		assert.Equal(t, int32(i), a.Attempt)
		assert.Equal(t, starts[i], a.StartedAt, "attempt %d started when the function was called", i)
		assert.Equal(t, starts[i]+25, a.EndedAt, "attempt %d ended when the call returned", i)
		assert.Equal(t, int64(25), a.DurationMs, "attempt %d", i)
		assert.Equal(t, p.Instance(), a.Instance, "attempt %d ran on this instance", i)
		assert.Equal(t, "v1.2.3@abc123", a.Build, "attempt %d", i)
	}
	assert.NotEmpty(t, p.Instance())
}

// The trace id of an attempt is that of the span in the context the
// processor passes to the recorder: here the one Run was given, which
// every delivery's context inherits.
func TestAttemptsCarryTheTraceOfTheRecordersContext(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), func(context.Context, *processor.Delivery) error { return errors.New("smtp down") }))
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	require.NoError(t, err)
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{7}}))
	ctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-errc)
	})
	<-p.Ready()

	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	evt := st.Events[0].ID
	f := info("Mailer", "onPlaced")
	require.Eventually(t, func() bool { return e.record(evt, f).Status == aggregate.StatusFailed }, waitFor, tick)
	streams, err := e.store.Load(context.Background(), aggregate.RecordAggregate(aggregate.RecordID(evt, f)), 1)
	require.NoError(t, err)
	steps, err := aggregate.StepsOf(streams)
	require.NoError(t, err)
	tl := aggregate.Timeline(steps)
	require.NotEmpty(t, tl)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", tl[0].TraceID)
}
