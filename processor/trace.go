package processor

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/tracing"
)

// WithTracerProvider sets the OpenTelemetry tracer provider of the
// processor's spans (default otel.GetTracerProvider(), a no-op unless the
// program installed one). A nil provider is an error wrapping
// ErrInvalidOption.
//
// Each function call gets a span (tracing.SpanCall) whose parent is the
// trace context the event was appended with; a replay's span
// (tracing.SpanReplay) has the context of the message that prepared it as
// parent, is linked to the event's trace and carries the record id and
// attempt; recording a result runs in a span (tracing.SpanRecord) that is
// a child of the call, and the recorder's appends carry its context.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return invalidOption("tracer provider is nil; omit WithTracerProvider for the global provider")
		}
		o.tracer, o.tracerSet = tp.Tracer(tracing.ScopeName), true
		return nil
	}
}

// defaultTracer is the global provider's tracer; the global provider
// delegates to one installed later.
func defaultTracer() trace.Tracer { return otel.GetTracerProvider().Tracer(tracing.ScopeName) }

// untracedGlobal is the global provider as it is before a program
// installs one: a no-op.
var untracedGlobal = otel.GetTracerProvider()

// tracingOff reports whether the processor's spans go nowhere: no
// provider was given and none was installed globally. Calls then skip
// starting spans, which costs allocations on every delivery, and only
// pass the event's trace context on.
func (p *Processor) tracingOff() bool {
	return !p.o.tracerSet && otel.GetTracerProvider() == untracedGlobal
}

// tracedCall is next in a span: for a normal delivery a child of the
// event's trace context, for a replay (ctx has a Compensation) a child of
// ctx's span linked to the event's trace. The span's context is kept in d
// so that recording the result runs in its trace.
func (p *Processor) tracedCall(ctx context.Context, f *function, d *Delivery, next Handler) error {
	event := tracing.StreamSpanContext(d.Stream)
	c, replay := CompensationFrom(ctx)
	if p.tracingOff() {
		// What a no-op span would do: the event's trace context is the
		// call's parent, and the recorder sees it.
		if !replay && event.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, event)
		}
		d.call = trace.SpanContextFromContext(ctx)
		return next(ctx, d)
	}
	var span trace.Span
	if replay {
		if event.IsValid() {
			ctx, span = p.o.tracer.Start(ctx, tracing.SpanReplay, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(trace.Link{SpanContext: event}))
		} else {
			ctx, span = p.o.tracer.Start(ctx, tracing.SpanReplay, trace.WithSpanKind(trace.SpanKindConsumer))
		}
	} else {
		if event.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, event)
		}
		ctx, span = p.o.tracer.Start(ctx, tracing.SpanCall, trace.WithSpanKind(trace.SpanKindConsumer))
	}
	d.call = span.SpanContext()
	if span.IsRecording() {
		span.SetAttributes(callAttributes(f, d)...)
		if replay {
			span.SetAttributes(replayAttributes(c)...)
		}
	}
	err := next(ctx, d)
	if err != nil {
		span.SetStatus(codes.Error, tracing.Status(err.Error()))
	}
	span.End()
	return err
}

func callAttributes(f *function, d *Delivery) []attribute.KeyValue {
	return []attribute.KeyValue{
		tracing.AttrContext.String(f.info.ContextName),
		tracing.AttrProcessor.String(f.info.ProcessorName),
		tracing.AttrFunction.String(f.info.Name),
		tracing.AttrFunctionKind.String(string(f.info.FunctionKind)),
		tracing.AttrAggregateType.String(d.Stream.Aggregate.Type),
		tracing.AttrAggregateID.String(d.Stream.Aggregate.ID),
		tracing.AttrEventID.String(d.Event.ID),
		tracing.AttrEventName.String(d.Event.Name),
		tracing.AttrVersion.Int64(int64(d.Stream.Version)),
		tracing.AttrSeq.Int64(int64(d.Stream.Seq)),
	}
}

func replayAttributes(c Compensation) []attribute.KeyValue {
	attrs := []attribute.KeyValue{tracing.AttrRecordID.String(c.ID)}
	if c.Attempt > 0 {
		attrs = append(attrs, tracing.AttrAttempt.Int(int(c.Attempt)))
	}
	if c.Release {
		attrs = append(attrs, tracing.AttrRelease.Bool(true))
	}
	if c.Request != "" {
		attrs = append(attrs, tracing.AttrReplayRequest.String(c.Request))
	}
	return attrs
}

// tracedRecord is the recorder's Record in a span that is a child of the
// call x resulted from (or of ctx's span when no call ran), so the
// recorder's commands carry the failed call's trace.
func (p *Processor) tracedRecord(ctx context.Context, x Execution) (Outcome, error) {
	if x.call.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, x.call)
	}
	if p.tracingOff() {
		return p.o.recorder.Record(ctx, x)
	}
	ctx, span := p.o.tracer.Start(ctx, tracing.SpanRecord)
	out, err := p.o.recorder.Record(ctx, x)
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrOutcome.String(string(out)), tracing.AttrEventID.String(x.EventID.ID))
		if x.Function != nil {
			span.SetAttributes(tracing.AttrProcessor.String(x.Function.ProcessorName), tracing.AttrFunction.String(x.Function.Name))
		}
		switch {
		case x.Compensation != nil:
			span.SetAttributes(replayAttributes(*x.Compensation)...)
		case x.Function != nil && out != OutcomeWaived && out != OutcomeUnrecorded && out != OutcomeNone:
			// A first failure: the record it creates (or found), attempt 0.
			span.SetAttributes(tracing.AttrRecordID.String(aggregate.RecordID(x.EventID.ID, *x.Function)), tracing.AttrAttempt.Int(0))
		}
		if err != nil {
			span.SetStatus(codes.Error, tracing.Status(err.Error()))
		}
	}
	span.End()
	return out, err
}
