// Package tracing is amends' OpenTelemetry support: the W3C trace context
// that travels with every stored stream, the span and attribute names the
// processor, recorder, scheduler and HTTP API use, and the setup of a
// tracer provider from the standard OTEL_* environment variables.
//
// # Propagation
//
// jsstore injects the caller's trace context into each appended message's
// headers (traceparent and tracestate, by the W3C Trace Context
// propagator) and hands it back on every read, in the Stream's
// TraceParent and TraceState. It crosses a trust boundary, so Header
// bounds what it keeps (MaxTraceParent, MaxTraceState) and an invalid
// value is ignored: a trace context never makes a message unreadable.
//
// # Spans
//
// The processor starts a span per function call whose parent is the
// event's trace context (SpanCall); a replay starts a span (SpanReplay)
// whose parent is the context of the message that prepared it (the
// scheduler pass or the HTTP request) and which is linked to the
// original event's trace, with the record id and attempt as attributes.
// Recording a result runs in a span (SpanRecord) that is a child of the
// call that produced it, so the commands it appends to the compensation
// stream carry the failed call's trace.
//
// # Setup
//
// FromEnv builds a tracer provider that exports over OTLP (HTTP or gRPC)
// or to a writer, as OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_* say;
// with none of them set it returns the global provider, which is a no-op
// unless the program installed one. Every amends component takes a
// provider as an option and defaults to otel.GetTracerProvider().
package tracing
