package scheduler

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/tracing"
)

// WithTracerProvider sets the OpenTelemetry tracer provider of the
// scheduler's spans (default otel.GetTracerProvider()): one per pass
// (tracing.SpanSchedulerPass) and, inside it, one per record it prepares
// (tracing.SpanSchedulerPrepare, with the record id). The prepare's
// command carries that span's context to the compensation stream, so the
// replay it causes continues the trace. A nil provider is an error
// wrapping ErrInvalidOption.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return fmt.Errorf("tracer provider is nil; omit WithTracerProvider for the global provider: %w", ErrInvalidOption)
		}
		o.tracer = tp.Tracer(tracing.ScopeName)
		return nil
	}
}

func (s *Scheduler) tracer() trace.Tracer {
	if s.opts.tracer != nil {
		return s.opts.tracer
	}
	return otel.GetTracerProvider().Tracer(tracing.ScopeName)
}

// startPass starts the span of a pass over due records.
func (s *Scheduler) startPass(ctx context.Context, due int) (context.Context, trace.Span) {
	ctx, span := s.tracer().Start(ctx, tracing.SpanSchedulerPass)
	span.SetAttributes(tracing.AttrDue.Int(due))
	return ctx, span
}

// startPrepare starts the span of preparing record d.
func (s *Scheduler) startPrepare(ctx context.Context, d index.Due) (context.Context, trace.Span) {
	ctx, span := s.tracer().Start(ctx, tracing.SpanSchedulerPrepare)
	span.SetAttributes(tracing.AttrRecordID.String(d.ID), tracing.AttrAttempt.Int(int(d.Retries)+1))
	return ctx, span
}

// endPrepare ends a prepare's span with its error, if any.
func endPrepare(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, tracing.Status(err.Error()))
	}
	span.End()
}
