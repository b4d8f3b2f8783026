package server

import (
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/tracing"
)

// requestPropagator reads a caller's W3C trace context from the request
// headers (traceparent, tracestate). The propagator validates what it
// reads and ignores a malformed context.
var requestPropagator propagation.TextMapPropagator = propagation.TraceContext{}

// untraced routes are probes and scrapes: a span per poll says nothing.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// maxSpanRecordID bounds the record id a span carries from the path.
const maxSpanRecordID = 256

func (s *Server) tracer() trace.Tracer {
	tp := s.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracing.ScopeName)
}

// startSpan starts the span of a request to rt, a child of the caller's
// trace context if the request carries one, and returns the request with
// the span in its context, so the commands it sends carry it. The span
// names the route, not the path; it carries the record id of routes that
// have one.
func (s *Server) startSpan(r *http.Request, rt route) (*http.Request, trace.Span) {
	if untraced[rt.pattern] {
		return r, nil
	}
	ctx := requestPropagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer().Start(ctx, rt.method+" "+rt.pattern, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		return r.WithContext(ctx), span
	}
	span.SetAttributes(attribute.String("http.request.method", rt.method), attribute.String("http.route", rt.pattern))
	if strings.Contains(rt.pattern, "{id}") && strings.HasPrefix(rt.pattern, "/api/v1/records/") {
		if id := r.PathValue("id"); id != "" && len(id) <= maxSpanRecordID {
			span.SetAttributes(tracing.AttrRecordID.String(id))
		}
	}
	return r.WithContext(ctx), span
}

// endSpan ends a request's span with its status code; a 5xx is an error.
func endSpan(span trace.Span, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, fmt.Sprintf("status %d", status))
	}
	span.End()
}
