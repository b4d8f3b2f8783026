package amends_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/amends-dev/amends"
	"github.com/amends-dev/amends/amendstest"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/tracing"
)

// WithTracerProvider reaches the processor: a failed call under the
// append's span is a child span of it.
func TestNewWithTracerProvider(t *testing.T) {
	ctx := t.Context()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	svc, err := amends.New(amendstest.JetStream(t), "shop", amends.WithTracerProvider(tp),
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(processor.WithSleeper(noWait)))
	require.NoError(t, err)
	fn := processor.Function{Processor: "Mailer", Name: "confirm", AggregateTypes: []string{"order"}}
	require.NoError(t, svc.Register(fn, func(context.Context, *processor.Delivery) error { return errors.New("smtp down") }))
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	actx, span := tp.Tracer("test").Start(ctx, "place order")
	_, err = svc.Append(actx, "order", "o-1", 0, eventstore.NewEvent{Name: "order_placed", Body: map[string]int{"qty": 1}})
	require.NoError(t, err)
	span.End()
	require.Eventually(t, func() bool { return svc.Recorder.Metrics().Recorded.Load() == 1 }, 30*time.Second, 5*time.Millisecond)
	var call *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == tracing.SpanCall {
			call = &s
		}
	}
	require.NotNil(t, call, "the call has a span")
	assert.Equal(t, span.SpanContext().SpanID(), call.Parent.SpanID(), "a child of the append's span")
}

// An Append without a span of the caller's starts one, the parent of the
// function's call and of the failure's recording: one trace per command,
// not one per call (issue 30, item 17).
func TestAppendStartsATraceWhenTheCallerHasNone(t *testing.T) {
	ctx := t.Context()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	svc, err := amends.New(amendstest.JetStream(t), "shop", amends.WithTracerProvider(tp),
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(processor.WithSleeper(noWait)))
	require.NoError(t, err)
	for _, name := range []string{"confirm", "invoice"} {
		fn := processor.Function{Processor: "Mailer", Name: name, AggregateTypes: []string{"order"}}
		require.NoError(t, svc.Register(fn, func(context.Context, *processor.Delivery) error { return errors.New("smtp down") }))
	}
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	st, err := svc.Append(ctx, "order", "o-1", 0, eventstore.NewEvent{Name: "order_placed", Body: map[string]int{"qty": 1}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return svc.Recorder.Metrics().Recorded.Load() == 2 }, 30*time.Second, 5*time.Millisecond)
	var appendSpan *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		if spans[i].Name == tracing.SpanAppend {
			appendSpan = &spans[i]
		}
	}
	require.NotNil(t, appendSpan, "Append started a span")
	assert.False(t, appendSpan.Parent.IsValid(), "a root")
	assert.Contains(t, appendSpan.Attributes, tracing.AttrAggregateID.String("o-1"))
	assert.Contains(t, appendSpan.Attributes, tracing.AttrVersion.Int64(int64(st.Version)))
	calls := 0
	for _, s := range spans {
		if s.Name == tracing.SpanCall {
			calls++
			assert.Equal(t, appendSpan.SpanContext.TraceID(), s.SpanContext.TraceID(), "both calls are in the append's trace")
			assert.Equal(t, appendSpan.SpanContext.SpanID(), s.Parent.SpanID())
		}
	}
	assert.Equal(t, 2, calls)

	// A caller's own span is kept: no second root.
	exp.Reset()
	actx, span := tp.Tracer("test").Start(ctx, "place order")
	_, err = svc.Append(actx, "order", "o-2", 0, eventstore.NewEvent{Name: "order_placed", Body: map[string]int{"qty": 1}})
	require.NoError(t, err)
	span.End()
	for _, s := range exp.GetSpans() {
		assert.NotEqual(t, tracing.SpanAppend, s.Name, "no append span under the caller's")
	}
}
