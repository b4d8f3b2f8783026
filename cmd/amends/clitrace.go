package main

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
)

// cliTrace returns ctx with a new trace of its own as the remote parent, so
// that every request one run of a client command sends carries the same W3C
// traceparent (the client injects it): the server's spans of those requests,
// and the spans of what they lead to (a prepare's replay), form one trace an
// operator can find. A ctx that already has a span context is kept.
func cliTrace(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:]) // crypto/rand never fails on the supported platforms
	_, _ = rand.Read(sid[:])
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
}
