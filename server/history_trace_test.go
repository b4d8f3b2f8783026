package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// A command appended in a trace carries it in its traceparent: the
// history names that trace (issue 30, item 19).
func TestHistoryNamesTheTraceOfEachCommand(t *testing.T) {
	e := newEnv(t)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	id := aggregate.RecordID("evt-traced", fn)
	res, err := e.svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-traced", AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"}, ExecuteAt: e.clock.Now().UnixMilli(),
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(t, err)
	e.wait(t, id, res.Version)
	var h []api.HistoryEntry
	r := e.do(t, "GET", "/api/v1/records/"+id+"/history", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &h)
	require.Len(t, h, 1)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", h[0].TraceID)
}
