package tracing

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
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
// when ctx carries no valid span context, and leaves out a tracestate
// longer than MaxTraceState, which a reader would drop. h must not be nil.
func Inject(ctx context.Context, h nats.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, headerCarrier(h))
	if len(h.Get(HeaderTraceState)) > MaxTraceState {
		h.Del(HeaderTraceState)
	}
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
	if sc, ok := parseVersion00(traceParent, traceState); ok {
		return sc
	}
	c := stringCarrier{parent: traceParent, state: traceState}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), c))
}

// parseVersion00 parses a traceparent of version 00 (all of today's) as
// the W3C propagator does, without its allocations: it is on every
// delivery's path. ok is false for any other version, which the
// propagator then parses.
func parseVersion00(traceParent, traceState string) (sc trace.SpanContext, ok bool) {
	const size = len("00-") + 32 + 1 + 16 + 1 + 2
	if len(traceParent) != size || traceParent[:3] != "00-" || traceParent[35] != '-' || traceParent[52] != '-' {
		return trace.SpanContext{}, strings.HasPrefix(traceParent, "00-") // version 00 has exactly this shape
	}
	var c trace.SpanContextConfig
	var flags [1]byte
	if !unhex(c.TraceID[:], traceParent[3:35]) || !unhex(c.SpanID[:], traceParent[36:52]) || !unhex(flags[:], traceParent[53:55]) || flags[0] > 3 {
		return trace.SpanContext{}, true
	}
	c.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	if traceState != "" {
		c.TraceState, _ = trace.ParseTraceState(traceState) // a bad tracestate does not void the traceparent
	}
	c.Remote = true
	sc = trace.NewSpanContext(c)
	if !sc.IsValid() {
		return trace.SpanContext{}, true
	}
	return sc, true
}

// unhex decodes lower-case hex s into dst (len(s) == 2*len(dst)).
func unhex(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Traced is a stored command that carries the trace of its append:
// *eventstore.Stream is one (its Trace method). Tracing reads it through
// this interface, so that it does not depend on the event store.
type Traced interface {
	// Trace returns the trace id the appender set, and the W3C
	// traceparent and tracestate of the append ("" when it had none).
	Trace() (id, parent, state string)
}

// StreamSpanContext is the span context of the append that stored st (see
// eventstore.Stream.TraceParent); invalid when it had none.
func StreamSpanContext(st Traced) trace.SpanContext {
	_, parent, state := st.Trace()
	return SpanContext(parent, state)
}

// StreamTraceID returns the trace id of the command stored as st: its
// TraceID field if the appender set one, else the trace id of the trace
// context its message carries (traceparent), in 32 hexadecimal digits; ""
// when it has neither. The history API and the notifications name a
// command's trace with it.
func StreamTraceID(st Traced) string {
	if id, _, _ := st.Trace(); id != "" {
		return id
	}
	if sc := StreamSpanContext(st); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// StreamContext returns ctx with the span context of the append that
// stored st as its remote parent, or ctx itself when st carries none.
func StreamContext(ctx context.Context, st Traced) context.Context {
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
