package amends

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/tracing"
)

// Service is the amends chain of one bounded context. The embedded
// Processor gives Register, RegisterAggregate, Snapshot, Start, Run, Stop
// and Wait; its documentation states the ack contract and the lifecycle.
// A Service is safe for concurrent use as its parts are.
type Service struct {
	*processor.Processor
	// Store is the event store the functions read and Append writes.
	Store *jsstore.Store
	// Records runs commands on ExecutionFailed records (what the scheduler
	// and operators do through the control plane).
	Records *aggregate.Service
	// Recorder records final failures and replay results on Records.
	Recorder *recorder.Recorder

	tracer func() trace.Tracer // the Append span's (WithTracerProvider, or the global provider's)
}

// Option configures New.
type Option func(*config)

type config struct {
	clock     aggregate.Clock
	logger    *slog.Logger
	store     []jsstore.Option
	records   []aggregate.ServiceOption
	recorder  []recorder.Option
	processor []processor.Option
	tracer    trace.TracerProvider
}

// WithClock sets the clock of every part: stream times, record times,
// execution times (default the system clock).
func WithClock(c aggregate.Clock) Option { return func(o *config) { o.clock = c } }

// WithLogger sets the processor's logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *config) { o.logger = l } }

// WithTracerProvider sets the OpenTelemetry tracer provider of the
// processor's spans (see processor.WithTracerProvider; default
// otel.GetTracerProvider()). The store carries every caller's trace
// context in the stored messages whatever the provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *config) { o.tracer = tp } }

// WithStoreOptions passes options to jsstore.New (prefixes, storage,
// replicas, ...).
func WithStoreOptions(opts ...jsstore.Option) Option {
	return func(o *config) { o.store = append(o.store, opts...) }
}

// WithRecordsOptions passes options to aggregate.NewService (the default
// retry spec, conflict retries).
func WithRecordsOptions(opts ...aggregate.ServiceOption) Option {
	return func(o *config) { o.records = append(o.records, opts...) }
}

// WithRecorderOptions passes options to recorder.New (send retries, actor).
func WithRecorderOptions(opts ...recorder.Option) Option {
	return func(o *config) { o.recorder = append(o.recorder, opts...) }
}

// WithProcessorOptions passes options to processor.New (concurrency,
// immediate retries, WithDeliverNew, ...). They apply after the ones New
// sets, so they may replace the recorder or the logger.
func WithProcessorOptions(opts ...processor.Option) Option {
	return func(o *config) { o.processor = append(o.processor, opts...) }
}

// New builds the chain of the bounded context contextName on js: the store,
// the record service on it, the recorder on that, and a processor of the
// context with the recorder and the records. It does no I/O: Start (or
// Run) provisions the streams and consumers. It returns an error wrapping
// the part's ErrInvalidOption (jsstore, recorder, processor) for an invalid
// context or option, and one wrapping processor.ErrInvalidOption for a nil
// js.
func New(js jetstream.JetStream, contextName string, opts ...Option) (*Service, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if js == nil {
		return nil, processorError("the JetStream context is nil; connect to NATS and call jetstream.New first")
	}
	popts := []processor.Option{}
	// The compensation stream allows purges: retention (amends serve
	// --retention) removes finished records from it. It is stored with S2
	// compression, as serve creates it: its messages repeat the event, the
	// state and the stack trace.
	sopts := []jsstore.Option{jsstore.WithRemovable(aggregate.Context), jsstore.WithCompressed(aggregate.Context)}
	ropts := []recorder.Option{}
	aopts := []aggregate.ServiceOption{}
	if c.clock != nil {
		sopts = append(sopts, jsstore.WithClock(c.clock.Now))
		aopts = append(aopts, aggregate.WithClock(c.clock))
		ropts = append(ropts, recorder.WithClock(c.clock))
		popts = append(popts, processor.WithClock(c.clock))
	}
	if c.logger != nil {
		popts = append(popts, processor.WithLogger(c.logger))
	}
	if c.tracer != nil {
		popts = append(popts, processor.WithTracerProvider(c.tracer))
	}
	store, err := jsstore.New(js, append(sopts, c.store...)...)
	if err != nil {
		return nil, err
	}
	records := aggregate.NewService(store, append(aopts, c.records...)...)
	rec, err := recorder.New(records, append(ropts, c.recorder...)...)
	if err != nil {
		return nil, err
	}
	popts = append(popts, processor.WithRecorder(rec), processor.WithRecords(records))
	p, err := processor.New(js, store, contextName, append(popts, c.processor...)...)
	if err != nil {
		return nil, err
	}
	svc := &Service{Processor: p, Store: store, Records: records, Recorder: rec}
	svc.tracer = func() trace.Tracer { return otel.GetTracerProvider().Tracer(tracing.ScopeName) }
	if c.tracer != nil {
		t := c.tracer.Tracer(tracing.ScopeName)
		svc.tracer = func() trace.Tracer { return t }
	}
	return svc, nil
}

// Append appends events to the aggregate (the Service's context,
// aggregateType, id) as one command at version expectedVersion+1 (0 for a
// new aggregate), with fresh ids and the clock's time: see
// jsstore.Store.AppendEvents for its errors (eventstore.ErrConflict when
// the aggregate is at another version, eventstore.ErrInvalid naming what
// breaks a rule).
//
// The stored command carries ctx's trace context, so the functions' calls
// on its events are part of the caller's trace. When ctx has no span,
// Append starts one (tracing.SpanAppend, a producer span with the context,
// aggregate and version), so that every call, failure and record of this
// command shares one trace instead of starting a trace each.
func (s *Service) Append(ctx context.Context, aggregateType, id string, expectedVersion uint64, events ...eventstore.NewEvent) (eventstore.Stream, error) {
	a := eventstore.AggregateID{Context: s.Context(), Type: aggregateType, ID: id}
	if trace.SpanContextFromContext(ctx).IsValid() || s.tracer == nil {
		return s.Store.AppendEvents(ctx, a, expectedVersion, events...)
	}
	ctx, span := s.tracer().Start(ctx, tracing.SpanAppend, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		tracing.AttrContext.String(a.Context), tracing.AttrAggregateType.String(a.Type), tracing.AttrAggregateID.String(a.ID)))
	defer span.End()
	st, err := s.Store.AppendEvents(ctx, a, expectedVersion, events...)
	if err != nil {
		span.SetStatus(codes.Error, tracing.Status(err.Error()))
		return st, err
	}
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrVersion.Int64(int64(st.Version)), tracing.AttrSeq.Int64(int64(st.Seq)))
	}
	return st, nil
}
