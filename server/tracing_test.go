package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/server"
	"github.com/amends-dev/amends/tracing"
)

// A request is a span, a child of the caller's traceparent, carrying the
// record id; the command it sends carries the span to the compensation
// stream. Probes are not traced.
func TestRequestSpans(t *testing.T) {
	base := newEnv(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := base.with(t, func(c *server.Config) { c.TracerProvider = tp })
	id := e.create(t, 1, &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 60})

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := e.do(t, "POST", "/api/v1/records/"+id+"/prepare_compensation", operatorKey, nil, "traceparent", caller)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do(t, "GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status)

	spans := exp.GetSpans()
	require.Len(t, spans, 1, "one span: the command; the probe has none")
	s := spans[0]
	assert.Equal(t, "POST /api/v1/records/{id}/prepare_compensation", s.Name, "named by route, not path")
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", s.SpanContext.TraceID().String(), "continues the caller's trace")
	assert.Equal(t, "00f067aa0ba902b7", s.Parent.SpanID().String())
	attrs := map[string]any{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	assert.Equal(t, id, attrs[string(tracing.AttrRecordID)], "the span carries the record id")
	assert.Equal(t, int64(200), attrs["http.response.status_code"])

	store, err := jsstore.New(e.js)
	require.NoError(t, err)
	streams, err := store.Load(t.Context(), aggregate.RecordAggregate(id), 1)
	require.NoError(t, err)
	last := streams[len(streams)-1]
	require.Equal(t, aggregate.NameCompensationPrepared, last.Events[0].Name)
	assert.Equal(t, s.SpanContext.SpanID(), tracing.StreamSpanContext(&last).SpanID(), "the prepare carries the request's span")

	r = e.do(t, "GET", "/api/v1/records/"+id, viewerKey, nil, "traceparent", "garbage")
	require.Equal(t, http.StatusOK, r.status, "a malformed traceparent is ignored")
	spans = exp.GetSpans()
	require.Len(t, spans, 2)
	assert.False(t, spans[1].Parent.IsValid(), "a malformed traceparent starts a new trace")
}
