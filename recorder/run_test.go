package recorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// A first failure and two replays (failed, then succeeded) leave three
// attempts in the record's history, each with its start, end, instance,
// build, error and the trace id of the span in the recorder's context.
func TestRecorderWritesEachAttemptsRun(t *testing.T) {
	store, err := jsstore.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	svc := aggregate.NewService(store, aggregate.WithClock(aggregate.ClockFunc(func() time.Time { return time.UnixMilli(t0 + 500) })))
	rec, err := recorder.New(svc)
	require.NoError(t, err)
	spec := aggregate.RetrySpec{MaxRetries: 2, MinBackoff: 1, ExecutionTimeout: 60}
	id := aggregate.RecordID(eventID.ID, fn)
	traces := []string{"4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c", "11111111111111111111111111111111"}
	spanCtx := func(i int) context.Context {
		tid, err := trace.TraceIDFromHex(traces[i])
		require.NoError(t, err)
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
		return trace.ContextWithSpanContext(context.Background(), sc)
	}

	x := failed(errBoom)
	x.RetrySpec, x.StartedAt, x.Instance, x.Build = &spec, time.UnixMilli(t0-30), "inst-a", "v1@abc"
	out, err := rec.Record(spanCtx(0), x)
	require.NoError(t, err)
	require.Equal(t, processor.OutcomeRecorded, out)

	for i, replayErr := range []error{errBoom, nil} {
		res, err := svc.Execute(context.Background(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{})
		require.NoError(t, err)
		x := replayedAt(res.State.Attempt(), res.Version, replayErr)
		x.ExecuteAt = time.UnixMilli(t0 + int64(i+1)*1000)
		x.StartedAt, x.Instance, x.Build = x.ExecuteAt.Add(-time.Duration(i+1)*100*time.Millisecond), "inst-b", "v2@def"
		out, err := rec.Record(spanCtx(i+1), x)
		require.NoError(t, err)
		require.Equal(t, processor.OutcomeApplied, out)
	}

	streams, err := store.Load(context.Background(), aggregate.RecordAggregate(id), 1)
	require.NoError(t, err)
	steps, err := aggregate.StepsOf(streams)
	require.NoError(t, err)
	tl := aggregate.Timeline(steps)
	require.Len(t, tl, 3, "three attempts: %+v", tl)
	for i, want := range []struct {
		attempt         int32
		outcome         string
		start, end, dur int64
		instance, build string
		err             bool
	}{
		{0, aggregate.AttemptFailed, t0 - 30, t0, 30, "inst-a", "v1@abc", true},
		{1, aggregate.AttemptFailed, t0 + 900, t0 + 1000, 100, "inst-b", "v2@def", true},
		{2, aggregate.AttemptSucceeded, t0 + 1800, t0 + 2000, 200, "inst-b", "v2@def", false},
	} {
		got := tl[i]
		assert.Equal(t, aggregate.EntryAttempt, got.Kind, "entry %d", i)
		assert.Equal(t, want.attempt, got.Attempt, "entry %d", i)
		assert.Equal(t, want.outcome, got.Outcome, "entry %d", i)
		assert.Equal(t, want.start, got.StartedAt, "entry %d", i)
		assert.Equal(t, want.end, got.EndedAt, "entry %d", i)
		assert.Equal(t, want.dur, got.DurationMs, "entry %d", i)
		assert.Equal(t, want.instance, got.Instance, "entry %d", i)
		assert.Equal(t, want.build, got.Build, "entry %d", i)
		assert.Equal(t, traces[i], got.TraceID, "entry %d: the trace id of the recorder's context", i)
		assert.Equal(t, want.err, got.Error != nil, "entry %d", i)
	}
	m := rec.Metrics()
	assert.Equal(t, uint64(1), m.Attempts.FirstFailure.Load())
	assert.Equal(t, uint64(1), m.Attempts.Failed.Load())
	assert.Equal(t, uint64(1), m.Attempts.Succeeded.Load())
	assert.Zero(t, m.Final.Total(), "no failure used the last retry")
}

// Without a valid span in the context, and with a start the clock puts
// after the end, the run keeps what is valid and the failure is recorded.
func TestRecorderRecordsWithAnUnknownTraceAndABadStart(t *testing.T) {
	f := newFixture(t)
	x := failed(errBoom)
	x.StartedAt, x.Instance = time.UnixMilli(t0+10_000), "inst-a"
	record(t, f, x, processor.OutcomeRecorded)
	st := f.state(t)
	require.Equal(t, aggregate.StatusFailed, st.Status)
	streams, err := f.store.Load(context.Background(), aggregate.RecordAggregate(st.ID), 1)
	require.NoError(t, err)
	steps, err := aggregate.StepsOf(streams)
	require.NoError(t, err)
	tl := aggregate.Timeline(steps)
	require.NotEmpty(t, tl)
	assert.Equal(t, "inst-a", tl[0].Instance)
	assert.Zero(t, tl[0].StartedAt, "a start after the end is dropped")
	assert.Empty(t, tl[0].TraceID, "no span, no trace id")
}

// A failure that uses the last retry, or is UNRECOVERABLE, is a final
// failure, counted by function.
func TestRecorderCountsFinalFailuresByFunction(t *testing.T) {
	f := newFixture(t)
	spec := aggregate.RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 60}
	x := failed(errBoom)
	x.RetrySpec = &spec
	record(t, f, x, processor.OutcomeRecorded)
	m := f.rec.Metrics()
	assert.Zero(t, m.Final.Total(), "one retry is left")
	attempt, version := f.prepareAt(t)
	record(t, f, replayedAt(attempt, version, errBoom), processor.OutcomeApplied)
	assert.Equal(t, map[string]uint64{"Mailer.onPlaced": 1}, m.Final.Counts(), "the retry was the last one")
	// A resend of the same result is a duplicate and not counted again.
	record(t, f, replayedAt(attempt, version, errBoom), processor.OutcomeApplied)
	assert.Equal(t, uint64(1), m.Final.Total())
}
