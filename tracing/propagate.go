package tracing

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/eventstore"
)

// Header names of the W3C trace context in a stored message.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// Bounds on the trace context read from a message: a traceparent of
// version 00 is 55 characters (later versions may add fields), and the
// W3C recommendation lets a tracestate be cut at 512 characters.
const (
	MaxTraceParent = 128
	MaxTraceState  = 512
)

// propagator is the W3C Trace Context propagator. It is fixed rather than
// the global one, so that what a message carries does not depend on the
// program's settings.
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// headerCarrier adapts NATS message headers to propagation.TextMapCarrier.
// NATS header names are case-sensitive; the W3C names are lower case.
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string { return nats.Header(c).Get(key) }

func (c headerCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes the trace context of ctx's span into h. It writes nothing
// when ctx carries no valid span context. h must not be nil.
func Inject(ctx context.Context, h nats.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, headerCarrier(h))
}

// Header returns the traceparent and tracestate that h carries, each
// empty if absent or longer than its bound (MaxTraceParent,
// MaxTraceState). It does not parse them: Context does.
func Header(h nats.Header) (traceParent, traceState string) {
	if h == nil {
		return "", ""
	}
	traceParent = h.Get(HeaderTraceParent)
	if traceParent == "" || len(traceParent) > MaxTraceParent {
		return "", ""
	}
	traceState = h.Get(HeaderTraceState)
	if len(traceState) > MaxTraceState {
		traceState = ""
	}
	return traceParent, traceState
}

// SpanContext parses a W3C traceparent and tracestate into the remote span
// context they name. It returns an invalid span context when traceParent
// is empty or malformed; a malformed tracestate is dropped.
func SpanContext(traceParent, traceState string) trace.SpanContext {
	if traceParent == "" {
		return trace.SpanContext{}
	}
	c := stringCarrier{parent: traceParent, state: traceState}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), c))
}

// StreamSpanContext is the span context of the append that stored st (see
// eventstore.Stream.TraceParent); invalid when it had none.
func StreamSpanContext(st *eventstore.Stream) trace.SpanContext {
	return SpanContext(st.TraceParent, st.TraceState)
}

// StreamContext returns ctx with the span context of the append that
// stored st as its remote parent, or ctx itself when st carries none.
func StreamContext(ctx context.Context, st *eventstore.Stream) context.Context {
	sc := StreamSpanContext(st)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// stringCarrier is a read-only carrier of one traceparent and tracestate.
type stringCarrier struct{ parent, state string }

func (c stringCarrier) Get(key string) string {
	switch key {
	case HeaderTraceParent:
		return c.parent
	case HeaderTraceState:
		return c.state
	}
	return ""
}

func (stringCarrier) Set(string, string) {}

func (stringCarrier) Keys() []string { return []string{HeaderTraceParent, HeaderTraceState} }
