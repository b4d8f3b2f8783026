package tracing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/tracing"
)

func newStream(a eventstore.AggregateID) eventstore.Stream {
	return eventstore.Stream{ID: uuid.NewString(), Aggregate: a, CreateTime: 1735000000000,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "order_placed", Body: []byte(`{}`)}}}
}

// The trace context of an append survives every read of the store and a
// consumer's delivery; an append without a span stores none.
func TestStoreCarriesTraceContext(t *testing.T) {
	srv := natstest.New(t)
	js := srv.JetStream()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, store.Provision(ctx, "shop"))

	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sctx, span := tp.Tracer("test").Start(ctx, "place order")
	ts, err := trace.ParseTraceState("vendor=abc")
	require.NoError(t, err)
	sc := span.SpanContext().WithTraceState(ts)
	sctx = trace.ContextWithSpanContext(sctx, sc)
	a := eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}
	v1, err := store.Append(sctx, newStream(a), 0)
	require.NoError(t, err)
	span.End()
	v2, err := store.Append(ctx, newStream(a), 1)
	require.NoError(t, err)
	assert.Empty(t, v2.TraceParent, "an append without a span carries no trace context")
	assert.Empty(t, v2.TraceState)

	want := sc.WithRemote(true)
	check := func(what string, st eventstore.Stream) {
		t.Helper()
		assert.Equal(t, want, tracing.StreamSpanContext(&st), "%s: the append's span context", what)
	}
	check("append", v1)
	got, err := store.GetSeq(ctx, "shop", v1.Seq)
	require.NoError(t, err)
	check("GetSeq", got)
	got, err = store.LoadVersion(ctx, a, 1)
	require.NoError(t, err)
	check("LoadVersion", got)
	all, err := store.Load(ctx, a, 1)
	require.NoError(t, err)
	require.Len(t, all, 2)
	check("Load", all[0])
	assert.Empty(t, all[1].TraceParent, "the second stream has none")

	raw, err := js.Stream(ctx, store.StreamName("shop"))
	require.NoError(t, err)
	m, err := raw.GetMsg(ctx, v1.Seq)
	require.NoError(t, err)
	assert.Equal(t, v1.TraceParent, m.Header.Get(tracing.HeaderTraceParent), "the message header holds the traceparent")
	assert.Equal(t, "vendor=abc", m.Header.Get(tracing.HeaderTraceState))
	assert.NotContains(t, string(m.Data), v1.TraceParent, "the document does not")

	cons, err := js.OrderedConsumer(ctx, store.StreamName("shop"), jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
	require.NoError(t, err)
	var delivered []eventstore.Stream
	for msg := range batch.Messages() {
		st, err := store.DecodeMsg(msg)
		require.NoError(t, err)
		delivered = append(delivered, st)
	}
	require.Len(t, delivered, 1)
	check("DecodeMsg", delivered[0])

	rctx := tracing.StreamContext(ctx, &delivered[0])
	assert.Equal(t, want, trace.SpanContextFromContext(rctx), "StreamContext makes it the remote parent")
	assert.Equal(t, ctx, tracing.StreamContext(ctx, &all[1]), "a stream without one leaves the context as it is")
}

// What a message carries is bounded and never trusted: oversized values
// are dropped, malformed ones give no span context.
func TestHostileTraceHeaders(t *testing.T) {
	valid := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name          string
		parent, state string
		wantParent    string
		wantState     string
		wantValid     bool
	}{
		{"valid", valid, "a=b", valid, "a=b", true},
		{"absent", "", "a=b", "", "", false},
		{"oversized traceparent", strings.Repeat("0", tracing.MaxTraceParent+1), "", "", "", false},
		{"oversized tracestate dropped", valid, strings.Repeat("a", tracing.MaxTraceState+1), valid, "", true},
		{"malformed traceparent", "00-zz-yy-01", "", "00-zz-yy-01", "", false},
		{"all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},
		{"malformed tracestate ignored", valid, "\x01\x02", valid, "\x01\x02", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := nats.Header{}
			if c.parent != "" {
				h.Set(tracing.HeaderTraceParent, c.parent)
			}
			if c.state != "" {
				h.Set(tracing.HeaderTraceState, c.state)
			}
			p, s := tracing.Header(h)
			assert.Equal(t, c.wantParent, p)
			assert.Equal(t, c.wantState, s)
			sc := tracing.SpanContext(p, s)
			assert.Equal(t, c.wantValid, sc.IsValid())
			if c.wantValid {
				assert.True(t, sc.IsRemote())
				assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
			}
		})
	}
	p, s := tracing.Header(nil)
	assert.Empty(t, p+s, "nil headers carry nothing")
}

// Inject writes nothing without a valid span context.
func TestInject(t *testing.T) {
	h := nats.Header{}
	tracing.Inject(context.Background(), h)
	assert.Empty(t, h)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	tracing.Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", h.Get(tracing.HeaderTraceParent))
	assert.Empty(t, h.Get(tracing.HeaderTraceState), "no tracestate to carry")

	ts := trace.TraceState{}
	var err error
	for i := range 8 {
		ts, err = ts.Insert(fmt.Sprintf("vendor%d", i), strings.Repeat("x", 100))
		require.NoError(t, err)
	}
	big := trace.ContextWithSpanContext(context.Background(), sc.WithTraceState(ts))
	h = nats.Header{}
	tracing.Inject(big, h)
	assert.NotEmpty(t, h.Get(tracing.HeaderTraceParent))
	assert.Empty(t, h.Get(tracing.HeaderTraceState), "a tracestate over %d characters is left out", tracing.MaxTraceState)
}

func TestStatus(t *testing.T) {
	assert.Equal(t, "short", tracing.Status("short"))
	long := strings.Repeat("é", tracing.MaxStatus)
	got := tracing.Status(long)
	assert.LessOrEqual(t, len(got), tracing.MaxStatus+len("…"))
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(got, "…")), "cut at a character boundary")
}

// SpanContext agrees with the W3C propagator on every input.
func FuzzSpanContext(f *testing.F) {
	for _, s := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-04",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		"", "00-", "garbage",
	} {
		f.Add(s, "vendor=abc,other=1")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, parent, state string) {
		c := propagation.MapCarrier{}
		if parent != "" {
			c[tracing.HeaderTraceParent] = parent
		}
		if state != "" {
			c[tracing.HeaderTraceState] = state
		}
		want := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
		got := tracing.SpanContext(parent, state)
		if !want.Equal(got) {
			t.Fatalf("SpanContext(%q, %q) = %v, the propagator says %v", parent, state, got, want)
		}
	})
}

func TestStreamTraceID(t *testing.T) {
	st := eventstore.Stream{TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", tracing.StreamTraceID(&st), "from the traceparent")
	st.TraceID = "given"
	assert.Equal(t, "given", tracing.StreamTraceID(&st), "the field the appender set wins")
	assert.Equal(t, "", tracing.StreamTraceID(&eventstore.Stream{TraceParent: "garbage"}))
	assert.Equal(t, "", tracing.StreamTraceID(&eventstore.Stream{}))
}
