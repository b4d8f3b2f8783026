package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/examples/orders"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/tracing"
)

// ORDERS_TRACE=stdout prints the example's spans: the mailer's failed
// call, its recording, and the replay linked to the original trace.
func TestTracesToStdout(t *testing.T) {
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(v, "")
	}
	t.Setenv(orders.TraceEnv, "stdout")
	ctx := t.Context()
	var out bytes.Buffer
	traces, err := orders.Tracing(ctx, &out)
	require.NoError(t, err)
	require.Equal(t, tracing.ExporterConsole, traces.Exporter())

	js := natstest.New(t).JetStream()
	clock := aggregate.ClockFunc(func() time.Time { return time.UnixMilli(1735000000000) })
	mail := orders.NewFlakyServer()
	app, err := orders.New(ctx, js, orders.Config{
		Mail: mail, Clock: clock, TracerProvider: traces.TracerProvider(),
		ProcessorOpts:   []processor.Option{processor.WithSleeper(noWait), processor.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		RecorderOptions: []recorder.Option{recorder.WithSleeper(noWait)},
	})
	require.NoError(t, err)
	errc := make(chan error, 1)
	runCtx, stopRun := context.WithCancel(context.Background())
	go func() { errc <- app.Processor.Run(runCtx) }()
	<-app.Processor.Ready()

	placeCtx, span := traces.TracerProvider().Tracer("orders").Start(ctx, "place o-1")
	mail.FailWith(orders.ErrGreylisted)
	st, err := app.Orders.Place(placeCtx, "o-1", orders.Placed{Customer: "Ada", Email: "ada@example.com"})
	require.NoError(t, err)
	span.End()
	mailer := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: orders.Context, ProcessorName: "Mailer", Name: "confirmOrder"}
	id := aggregate.RecordID(st.Events[0].ID, mailer)
	require.Eventually(t, func() bool { _, _, err := app.Records.Get(ctx, id); return err == nil }, 30*time.Second, 5*time.Millisecond)
	mail.FailWith(nil)
	_, err = app.Records.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, _, err := app.Records.Get(ctx, id)
		return err == nil && rec.Status == aggregate.StatusSucceeded
	}, 30*time.Second, 5*time.Millisecond)
	stopRun()
	require.NoError(t, <-errc)
	require.NoError(t, traces.Shutdown(ctx), "flushes the spans")

	type stub struct {
		Name        string
		SpanContext struct{ TraceID string }
		Links       []struct{ SpanContext struct{ TraceID string } }
	}
	var names []string
	var replay *stub
	dec := json.NewDecoder(&out)
	for dec.More() {
		var s stub
		require.NoError(t, dec.Decode(&s))
		names = append(names, s.Name)
		if s.Name == tracing.SpanReplay {
			replay = &s
		}
	}
	assert.Contains(t, names, tracing.SpanCall)
	assert.Contains(t, names, tracing.SpanRecord)
	require.NotNil(t, replay, "the replay's span is printed; got %v", names)
	require.Len(t, replay.Links, 1)
	assert.Equal(t, span.SpanContext().TraceID().String(), replay.Links[0].SpanContext.TraceID, "the replay links the order's trace")
}
