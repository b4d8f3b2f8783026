package processor

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/amends-dev/amends/eventstore"
)

// BenchmarkTracedCall is the cost tracing adds to one function call, the
// handler doing nothing: untraced (the call alone), off (global no-op provider), off with the
// event's trace context to parse, on (SDK, every span sampled, batched to
// an exporter that drops them). Run:
//
//	go test -run '^$' -bench TracedCall ./processor/
func BenchmarkTracedCall(b *testing.B) {
	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, m := range []struct {
		name        string
		sdk         bool
		traceParent string
	}{{"untraced", false, ""}, {"off", false, ""}, {"off-carried", false, parent}, {"on", true, parent}} {
		b.Run(m.name, func(b *testing.B) {
			p := &Processor{o: defaultOptions()}
			if m.sdk {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				if err := WithTracerProvider(tp)(&p.o); err != nil {
					b.Fatal(err)
				}
			}
			f, err := newFunction("shop", Function{Processor: "Bench", Name: "onPlaced", AggregateTypes: []string{"order"}},
				func(context.Context, *Delivery) error { return nil }, Retry{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			st := eventstore.Stream{ID: "s-1", Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}, Version: 1, Seq: 7,
				Events: []eventstore.Event{{ID: "e-1", Name: "order_placed", Body: []byte(`{}`)}}, TraceParent: m.traceParent}
			d := &Delivery{Stream: &st, Event: &st.Events[0], Function: f.info}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			run := p.traced(f)(f.handler)
			if m.name == "untraced" { // the call alone, for comparison
				run = f.handler
			}
			for b.Loop() {
				if err := run(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
