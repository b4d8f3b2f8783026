package processor_test

// Dispatch and recording with tracing off (the global no-op provider) and
// on (the SDK sampling every span, batched to an exporter that drops
// them), in the same run; compare their msgs/s. Run:
//
//	go test -run '^$' -bench 'Tracing' -benchtime 2000x ./processor/

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/tracing"
)

// tracingModes are the benchmarks' variants: whether the processor has an
// SDK provider, and whether the stored events carry a traceparent (as
// they do when the appender traces).
var tracingModes = []struct {
	name    string
	sdk     bool
	carried bool
}{
	{"off", false, false},
	{"off-carried", false, true},
	{"on", true, true},
}

// publishTraced is publishN with, when carried, a traceparent on every
// message (one trace, as from one appender's span).
func publishTraced(b *testing.B, e *env, n int, carried bool) {
	b.Helper()
	const window = 2000
	h := nats.Header{}
	if carried {
		ctx, span := sdktrace.NewTracerProvider().Tracer("bench").Start(context.Background(), "append")
		tracing.Inject(ctx, h)
		span.End()
	}
	var futures []jetstream.PubAckFuture
	for i := range n {
		st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order(fmt.Sprintf("b-%d", i)), Version: 1, CreateTime: t0,
			Events: []eventstore.Event{{ID: uuid.NewString(), Name: "order_placed", Body: []byte(`{"qty":1}`)}}}
		data, err := eventstore.Encode(&st)
		if err != nil {
			b.Fatal(err)
		}
		subj, _ := e.store.Subject(st.Aggregate)
		m := nats.NewMsg(subj)
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, st.ID)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		m.Header.Set(jsstore.HeaderVersion, "1")
		for k, v := range h {
			m.Header[k] = v
		}
		f, err := e.js.PublishMsgAsync(m)
		if err != nil {
			b.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == window || i == n-1 {
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					b.Fatal(err)
				}
			}
			futures = futures[:0]
		}
	}
}

func tracerOptions(b *testing.B, sdk bool) []processor.Option {
	if !sdk {
		return nil
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return []processor.Option{processor.WithTracerProvider(tp)}
}

// BenchmarkDispatchTracing: BenchmarkDispatch's amends case per tracing
// mode.
func BenchmarkDispatchTracing(b *testing.B) {
	for _, m := range tracingModes {
		b.Run(m.name, func(b *testing.B) {
			e := newEnv(b)
			publishTraced(b, e, b.N, m.carried)
			p := e.processor(tracerOptions(b, m.sdk)...)
			if err := p.Register(fn("Bench", "onPlaced"), func(context.Context, *processor.Delivery) error { return nil }); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			stop := run(b, p)
			testwait.Within(b, 5*time.Minute, "all acked", func() bool { return p.Metrics().Acked.Load() == uint64(b.N) })
			b.StopTimer()
			stop()
			report(b, b.N)
		})
	}
}

// BenchmarkRecordTracing: BenchmarkRecordFailures' amends case per
// tracing mode (8 failing functions, one lane each).
func BenchmarkRecordTracing(b *testing.B) {
	const functions = 8
	for _, m := range tracingModes {
		b.Run(m.name, func(b *testing.B) {
			e := newEnv(b)
			events := (b.N + functions - 1) / functions
			publishTraced(b, e, events, m.carried)
			p := e.processor(append(tracerOptions(b, m.sdk), processor.WithConcurrency(1), processor.WithoutReplay())...)
			for i := range functions {
				if err := p.Register(fn(fmt.Sprintf("Failing%d", i), "onPlaced"), func(context.Context, *processor.Delivery) error {
					return errBoom
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			stop := run(b, p)
			testwait.Within(b, 5*time.Minute, "all recorded", func() bool { return e.rec.Metrics().Recorded.Load() == uint64(events*functions) })
			b.StopTimer()
			stop()
			report(b, events*functions)
		})
	}
}
