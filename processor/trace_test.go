package processor_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/tracing"
)

// newTracer returns an SDK provider exporting synchronously to an
// in-memory exporter.
func newTracer(t testing.TB) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// A failure and its two replays give three call spans: the first a child
// of the append's span, each replay a child of the prepare's span and
// linked to the original trace, with record id and attempt; each result
// is recorded in a child span of its call, and the records' commands
// carry that trace on the compensation stream.
func TestTracingFailureAndTwoReplays(t *testing.T) {
	e := newEnv(t)
	tp, exp := newTracer(t)
	p := e.processor(processor.WithTracerProvider(tp))
	mailer := newCounter()
	mailer.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(t, p)
	test := tp.Tracer("test")

	actx, appendSpan := test.Start(context.Background(), "place order")
	st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order("o-1"), CreateTime: t0,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "order_placed", Body: []byte(`{}`)}}}
	st, err := e.store.Append(actx, st, 0)
	require.NoError(t, err)
	appendSpan.End()
	origin := appendSpan.SpanContext()
	assert.Equal(t, origin.WithRemote(true), tracing.StreamSpanContext(&st), "the append returns the trace context it stored")

	evt := st.Events[0].ID
	id := aggregate.RecordID(evt, info("Mailer", "onPlaced"))
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusFailed }, waitFor, tick)

	prepare := func(name string) trace.SpanContext {
		ctx, span := test.Start(context.Background(), name)
		defer span.End()
		_, err := e.svc.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		return span.SpanContext()
	}
	mailer.failWith(errors.New("smtp down"))
	e.clock.SetMillis(t0 + 1000)
	prep1 := prepare("prepare 1")
	require.Eventually(t, func() bool {
		r := e.record(evt, info("Mailer", "onPlaced"))
		return r.Status == aggregate.StatusFailed && r.Attempt() == 1 && r.Error.ErrorMsg == "smtp down"
	}, waitFor, tick)
	mailer.succeed()
	e.clock.SetMillis(t0 + 2000)
	prep2 := prepare("prepare 2")
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, waitFor, tick)
	require.Eventually(t, func() bool { return len(spansNamed(exp, tracing.SpanRecord)) == 3 }, waitFor, tick, "three results recorded")

	calls := spansNamed(exp, tracing.SpanCall)
	require.Len(t, calls, 1, "one call span for the delivery")
	first := calls[0]
	assert.Equal(t, origin.TraceID(), first.SpanContext.TraceID(), "the call continues the append's trace")
	assert.Equal(t, origin.SpanID(), first.Parent.SpanID(), "the call's parent is the append's span")
	assert.True(t, first.Parent.IsRemote(), "the parent came from the message headers")
	assert.Equal(t, "onPlaced", attr(first, tracing.AttrFunction).AsString())
	assert.Equal(t, "Mailer", attr(first, tracing.AttrProcessor).AsString())
	assert.Equal(t, "o-1", attr(first, tracing.AttrAggregateID).AsString())
	assert.Equal(t, "order", attr(first, tracing.AttrAggregateType).AsString())
	assert.Equal(t, evt, attr(first, tracing.AttrEventID).AsString())
	assert.Equal(t, "order_placed", attr(first, tracing.AttrEventName).AsString())
	assert.Equal(t, int64(1), attr(first, tracing.AttrVersion).AsInt64())
	assert.Equal(t, "boom", first.Status.Description, "the failed call's status holds the error")

	replays := spansNamed(exp, tracing.SpanReplay)
	require.Len(t, replays, 2, "one span per replay")
	for i, prep := range []trace.SpanContext{prep1, prep2} {
		r := replays[i]
		assert.Equal(t, prep.TraceID(), r.SpanContext.TraceID(), "replay %d continues its prepare's trace", i+1)
		assert.Equal(t, prep.SpanID(), r.Parent.SpanID(), "replay %d's parent is its prepare's span, through the compensation stream", i+1)
		require.Len(t, r.Links, 1, "replay %d is linked to the original trace", i+1)
		assert.Equal(t, origin.TraceID(), r.Links[0].SpanContext.TraceID(), "replay %d links the original trace", i+1)
		assert.Equal(t, id, attr(r, tracing.AttrRecordID).AsString(), "replay %d carries the record id", i+1)
		assert.Equal(t, int64(i+1), attr(r, tracing.AttrAttempt).AsInt64(), "replay %d carries its attempt", i+1)
		assert.Equal(t, "onPlaced", attr(r, tracing.AttrFunction).AsString())
	}
	assert.Equal(t, "smtp down", replays[0].Status.Description)
	assert.Empty(t, replays[1].Status.Description, "the successful replay has no error")

	records := spansNamed(exp, tracing.SpanRecord)
	parents := map[trace.SpanID]tracetest.SpanStub{}
	for _, r := range records {
		parents[r.Parent.SpanID()] = r
	}
	for i, c := range []tracetest.SpanStub{first, replays[0], replays[1]} {
		r, ok := parents[c.SpanContext.SpanID()]
		require.True(t, ok, "call %d's result is recorded in a child span of the call", i)
		assert.Equal(t, c.SpanContext.TraceID(), r.SpanContext.TraceID())
	}
	assert.Equal(t, string(processor.OutcomeRecorded), attr(parents[first.SpanContext.SpanID()], tracing.AttrOutcome).AsString())
	// The first failure's record span names its record and attempt 0, as
	// the replays' do (issue 30, item 18).
	assert.Equal(t, aggregate.RecordID(evt, info("Mailer", "onPlaced")), attr(parents[first.SpanContext.SpanID()], tracing.AttrRecordID).AsString())
	assert.Equal(t, int64(0), attr(parents[first.SpanContext.SpanID()], tracing.AttrAttempt).AsInt64())
	assert.Equal(t, int64(1), attr(parents[replays[0].SpanContext.SpanID()], tracing.AttrAttempt).AsInt64())

	// The compensation stream carries each command's trace context.
	history, err := e.store.Load(context.Background(), eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: id}, 1)
	require.NoError(t, err)
	require.Len(t, history, 5, "created, prepared, failed, prepared, succeeded")
	want := []trace.SpanContext{
		parents[first.SpanContext.SpanID()].SpanContext, prep1,
		parents[replays[0].SpanContext.SpanID()].SpanContext, prep2,
		parents[replays[1].SpanContext.SpanID()].SpanContext,
	}
	for i, h := range history {
		got := tracing.StreamSpanContext(&h)
		assert.Equal(t, want[i].TraceID(), got.TraceID(), "record version %d (%s) carries its command's trace", h.Version, h.Events[0].Name)
		assert.Equal(t, want[i].SpanID(), got.SpanID(), "record version %d (%s) carries its command's span", h.Version, h.Events[0].Name)
	}

	// The attempt history names each attempt's trace: the original one for
	// the first failure, each replay's own for the replays.
	steps, err := aggregate.StepsOf(history)
	require.NoError(t, err)
	var traces []string
	for _, en := range aggregate.Timeline(steps) {
		if en.Kind == aggregate.EntryAttempt {
			traces = append(traces, en.TraceID)
		}
	}
	assert.Equal(t, []string{origin.TraceID().String(), prep1.TraceID().String(), prep2.TraceID().String()}, traces,
		"the attempts' trace ids: the event's, then each replay's")
}

// Without a provider the processor uses the global one, a no-op: no span
// is recorded, and the recorder still sees the event's trace context, so
// a record can name the original trace with tracing off.
func TestTracingOffKeepsTheEventsTrace(t *testing.T) {
	e := newEnv(t)
	seen := make(chan trace.SpanContext, 1)
	rec := recorderFunc(func(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
		select {
		case seen <- trace.SpanContextFromContext(ctx):
		default:
		}
		return processor.OutcomeRecorded, nil
	})
	p := e.processor(processor.WithRecorder(rec))
	mailer := newCounter()
	mailer.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(t, p)

	tp, exp := newTracer(t)
	actx, span := tp.Tracer("test").Start(context.Background(), "place order")
	st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order("o-1"), CreateTime: t0,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "order_placed", Body: []byte(`{}`)}}}
	_, err := e.store.Append(actx, st, 0)
	require.NoError(t, err)
	span.End()

	var got trace.SpanContext
	require.Eventually(t, func() bool {
		select {
		case got = <-seen:
			return true
		default:
			return false
		}
	}, waitFor, tick)
	assert.Equal(t, span.SpanContext().TraceID(), got.TraceID(), "the recorder's context holds the event's trace")
	assert.Len(t, exp.GetSpans(), 1, "only the test's own span was recorded")
}

type recorderFunc func(ctx context.Context, x processor.Execution) (processor.Outcome, error)

func (f recorderFunc) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	return f(ctx, x)
}

func TestWithTracerProviderNil(t *testing.T) {
	e := newEnv(t)
	_, err := processor.New(e.js, e.store, ctxName, processor.WithTracerProvider(nil))
	require.ErrorIs(t, err, processor.ErrInvalidOption)
	assert.Contains(t, err.Error(), "tracer provider is nil")
}

// A replay's immediate retry resumes on its lane, from the retry timer:
// its call is still a child of the prepare's span, as the first call is.
func TestTracingAReplaysRetryKeepsThePrepare(t *testing.T) {
	e := newEnv(t)
	tp, exp := newTracer(t)
	p := e.processor(processor.WithTracerProvider(tp))
	var replays atomic.Int32
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), func(ctx context.Context, _ *processor.Delivery) error {
		if _, replay := processor.CompensationFrom(ctx); !replay {
			return errBoom // the live call: a record
		}
		if replays.Add(1) == 1 {
			return failure.Recoverable(errors.New("smtp busy")) // retried at once
		}
		return nil
	}))
	run(t, p)
	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	evt := st.Events[0].ID
	id := aggregate.RecordID(evt, info("Mailer", "onPlaced"))
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusFailed }, waitFor, tick)

	e.clock.SetMillis(t0 + 1000)
	ctx, span := tp.Tracer("test").Start(context.Background(), "prepare")
	_, err := e.svc.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	span.End()
	prep := span.SpanContext()
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, waitFor, tick)

	calls := spansNamed(exp, tracing.SpanReplay)
	require.Len(t, calls, 2, "the failed call and its immediate retry")
	for i, r := range calls {
		assert.Equal(t, prep.TraceID(), r.SpanContext.TraceID(), "call %d continues the prepare's trace", i+1)
		assert.Equal(t, prep.SpanID(), r.Parent.SpanID(), "call %d's parent is the prepare's span", i+1)
	}
}
