package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/tracing"
)

// A pass is a span; each prepare is a child span carrying the record id,
// and the prepare's command carries that span's context in the store.
func TestSchedulerSpans(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	versions := map[string]uint64{}
	for i := range 2 {
		id, v := e.create(t, i, aggregate.Recoverable)
		versions[id] = v
	}
	e.clock.Set(t0.Add(2 * time.Second))
	e.indexed(t, versions)

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ticks := make(chan time.Time)
	s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithTracerProvider(tp))
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	require.Equal(t, uint64(2), s.Stats().Prepared)

	var pass tracetest.SpanStub
	prepares := map[string]tracetest.SpanStub{}
	for _, sp := range exp.GetSpans() {
		switch sp.Name {
		case tracing.SpanSchedulerPass:
			pass = sp
		case tracing.SpanSchedulerPrepare:
			for _, kv := range sp.Attributes {
				if kv.Key == tracing.AttrRecordID {
					prepares[kv.Value.AsString()] = sp
				}
			}
		}
	}
	require.True(t, pass.SpanContext.IsValid(), "the pass has a span")
	for _, kv := range pass.Attributes {
		if kv.Key == tracing.AttrDue {
			assert.Equal(t, int64(2), kv.Value.AsInt64(), "the pass span counts the due records")
		}
	}
	require.Len(t, prepares, 2, "one prepare span per record, named by its id")
	for id, sp := range prepares {
		require.Contains(t, versions, id)
		assert.Equal(t, pass.SpanContext.SpanID(), sp.Parent.SpanID(), "the prepare of %s is a child of the pass", id)
		streams, err := e.store.Load(t.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(t, err)
		last := streams[len(streams)-1]
		require.Equal(t, aggregate.NameCompensationPrepared, last.Events[0].Name)
		got := tracing.StreamSpanContext(&last)
		assert.Equal(t, sp.SpanContext.SpanID(), got.SpanID(), "the prepare of %s carries its span to the compensation stream", id)
	}
}

func TestSchedulerTracerProviderNil(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	_, err := scheduler.New(e.index, e.svc, e.leases, scheduler.WithTracerProvider(nil))
	require.ErrorIs(t, err, scheduler.ErrInvalidOption)
}
