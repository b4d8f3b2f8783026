package processor_test

// Each amends figure is measured next to the raw JetStream operation it
// builds on, in the same run; compare their ops/s. Run:
//
//	go test -run '^$' -bench . -benchtime 20000x ./processor/

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/processor"
)

// publishN stores n one-event streams, each the first version of its own
// aggregate, pipelined, with the headers Append writes.
func publishN(b testing.TB, e *env, n int) {
	b.Helper()
	const window = 2000
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

func report(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDispatch: events to a trivial function through the processor
// (decode, lane, handler, ack) vs a raw consumer acking each message.
func BenchmarkDispatch(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		e := newEnv(b)
		publishN(b, e, b.N)
		cons, err := e.js.CreateOrUpdateConsumer(context.Background(), e.store.StreamName(ctxName), jetstream.ConsumerConfig{
			Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024, FilterSubject: e.store.FilterSubject(ctxName, "order")})
		if err != nil {
			b.Fatal(err)
		}
		var acked atomic.Int64
		b.ResetTimer()
		cc, err := cons.Consume(func(m jetstream.Msg) {
			if m.Ack() == nil {
				acked.Add(1)
			}
			// nats.go's usual consumer; a 5 s pull expiry bounds the rare
			// pull stalls seen with its default 30 s.
		}, jetstream.PullMaxMessages(500), jetstream.PullExpiry(5*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		testwait.Within(b, 5*time.Minute, "all acked", func() bool { return acked.Load() == int64(b.N) })
		b.StopTimer()
		cc.Stop()
		report(b, b.N)
	})
	b.Run("amends", func(b *testing.B) {
		e := newEnv(b)
		publishN(b, e, b.N)
		p := e.processor()
		var calls atomic.Int64
		if err := p.Register(fn("Bench", "onPlaced"), func(context.Context, *processor.Delivery) error {
			calls.Add(1)
			return nil
		}); err != nil {
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

// BenchmarkRecordFailures: failures recorded per second with 8 functions
// failing concurrently (8 processors, one lane each), vs raw synchronous
// publishes with an expected last subject sequence from 8 goroutines.
func BenchmarkRecordFailures(b *testing.B) {
	const functions = 8
	b.Run("raw", func(b *testing.B) {
		e := newEnv(b)
		var next atomic.Int64
		b.ResetTimer()
		var wg sync.WaitGroup
		for range functions {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(b.N) {
						return
					}
					m := nats.NewMsg(fmt.Sprintf("amends.compensation.execution_failed.r%d", i))
					m.Data = []byte(`{"error":{"errorCode":"BadRequest","errorMsg":"boom"}}`)
					m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
					if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		report(b, b.N)
	})
	b.Run("amends", func(b *testing.B) {
		e := newEnv(b)
		events := (b.N + functions - 1) / functions
		publishN(b, e, events)
		p := e.processor(processor.WithConcurrency(1), processor.WithoutReplay())
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
