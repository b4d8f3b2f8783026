package projection

// JetStream benchmarks, each next to raw JetStream in the same run. Run:
// go test -run '^$' -bench 'Rebuild|Projector' -benchtime 1x ./projection/

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// BenchmarkRebuild loads 100 000 and 1 000 000 views from the bucket into
// a new index (what a restart costs), next to a raw watch that only
// receives them, in the same run. Target at 1M: ≤ 5 s.
func BenchmarkRebuild(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) { benchRebuild(b, n) })
	}
}

func benchRebuild(b *testing.B, n int) {
	js := natstest.New(b).JetStream()
	views, err := OpenViews(b.Context(), js)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := range n {
		v := randomView(r, i)
		v.Seq += 20 // version v is at a sequence of at least v, or the view does not validate
		data, err := appendView(&v)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync("$KV."+DefaultBucket+"."+v.State.ID, data); err != nil {
			b.Fatal(err)
		}
		if i%2048 == 2047 {
			<-js.PublishAsyncComplete() // stay under the async publisher's limit (4 000 by default; above it a publish stalls, and fails under load)
		}
	}
	<-js.PublishAsyncComplete()
	b.Run("raw-watch", func(b *testing.B) {
		for range b.N {
			w, err := views.WatchAll(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			for e := range w.Updates() {
				if e == nil {
					break
				}
			}
			w.Stop()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
	})
	b.Run("index", func(b *testing.B) {
		for range b.N {
			ix, err := NewIndex(views, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			go func() { done <- ix.Run(ctx) }()
			<-ix.Ready()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			if ix.Len() != n {
				b.Fatalf("index has %d records, want %d", ix.Len(), n)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
	})
}

// BenchmarkProjector projects 20 000 commands (one record each) into an
// empty bucket, next to a raw durable consumer that only acks the same
// messages, one that also puts each message's payload in a KV bucket from
// as many workers as the projector has, and one that pipelines those puts
// (a create each, acknowledging the message once its put is): the
// projector's floor, one KV write per command. Each side reports its CPU
// time per message (the process's, NATS server included), which compares
// them better than their rates on a loaded machine. The projector also
// reports its rate as a ratio of the ack-only consumer's and of the
// pipelined puts' in the same run, when they ran.
func BenchmarkProjector(b *testing.B) {
	const n = 20_000
	js := natstest.New(b).JetStream()
	store, err := jsstore.New(js)
	if err != nil {
		b.Fatal(err)
	}
	svc := aggregate.NewService(store)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= n; i = next.Add(1) {
				evt := fmt.Sprintf("evt-%d", i)
				f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "P", Name: "on"}
				_, err := svc.Execute(context.Background(), aggregate.RecordID(evt, f), aggregate.CreateExecutionFailed{
					EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: evt}, Version: 1},
					Function: f, Error: aggregate.ErrorDetails{ErrorCode: "E", ErrorMsg: "boom"}, ExecuteAt: base,
				}, aggregate.Meta{})
				if err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	stream := store.StreamName(aggregate.Context)
	round := 0
	var ackOnly, putAsync float64 // msgs/s of those sides in this run, 0 if not run
	b.Run("raw-consumer", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			round++
			cons, err := js.CreateOrUpdateConsumer(b.Context(), stream, jetstream.ConsumerConfig{
				Durable: fmt.Sprintf("raw-%d", round), AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024,
				FilterSubject: store.FilterSubject(aggregate.Context, aggregate.AggregateType),
			})
			if err != nil {
				b.Fatal(err)
			}
			var got atomic.Int64
			done := make(chan struct{})
			cc, err := cons.Consume(func(m jetstream.Msg) {
				_ = m.Ack()
				if got.Add(1) == n {
					close(done)
				}
			}, jetstream.PullMaxMessages(1024))
			if err != nil {
				b.Fatal(err)
			}
			<-done
			cc.Stop()
		}
		ackOnly = float64(n*b.N) / b.Elapsed().Seconds()
		b.ReportMetric(ackOnly, "msgs/s")
		b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(n*b.N), "cpu-µs/msg")
	})
	b.Run("raw-consumer+kv-put", func(b *testing.B) { benchKVPut(b, js, store, n, &round) })
	b.Run("raw-consumer+kv-put-async", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			round++
			bucket := fmt.Sprintf("raw-async-%d", round)
			if _, err := OpenViews(b.Context(), js, WithBucket(bucket)); err != nil {
				b.Fatal(err)
			}
			cons, err := js.CreateOrUpdateConsumer(b.Context(), stream, jetstream.ConsumerConfig{
				Durable: bucket, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024,
				FilterSubject: store.FilterSubject(aggregate.Context, aggregate.AggregateType),
			})
			if err != nil {
				b.Fatal(err)
			}
			type put struct {
				m   jetstream.Msg
				fut jetstream.PubAckFuture
			}
			pending := make(chan put, 1024)
			done := make(chan struct{})
			go func() {
				for i := 0; i < n; i++ {
					p := <-pending
					select {
					case <-p.fut.Ok():
					case err := <-p.fut.Err():
						panic(err)
					}
					_ = p.m.Ack()
				}
				close(done)
			}()
			cc, err := cons.Consume(func(m jetstream.Msg) {
				md, _ := m.Metadata()
				fut, err := js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + bucket + "." + fmt.Sprint(md.Sequence.Stream), Data: m.Data(), Header: nats.Header{}},
					jetstream.WithExpectLastSequencePerSubject(0))
				if err != nil {
					panic(err)
				}
				pending <- put{m, fut}
			}, jetstream.PullMaxMessages(1024))
			if err != nil {
				b.Fatal(err)
			}
			<-done
			cc.Stop()
			<-cc.Closed()
		}
		putAsync = float64(n*b.N) / b.Elapsed().Seconds()
		b.ReportMetric(putAsync, "msgs/s")
		b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(n*b.N), "cpu-µs/msg")
	})
	b.Run("projector", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			round++
			views, err := OpenViews(b.Context(), js, WithBucket(fmt.Sprintf("views-%d", round)))
			if err != nil {
				b.Fatal(err)
			}
			p, err := NewProjector(js, store, views, WithDurable(fmt.Sprintf("projector-%d", round)))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			deadline := time.Now().Add(5 * time.Minute)
			for p.Stats().Projected < n {
				if time.Now().After(deadline) {
					b.Fatalf("projected %d of %d within 5 minutes", p.Stats().Projected, n)
				}
				time.Sleep(time.Millisecond) // polling, with the deadline above
			}
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
		rate := float64(n*b.N) / b.Elapsed().Seconds()
		b.ReportMetric(rate, "msgs/s")
		b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(n*b.N), "cpu-µs/msg")
		if ackOnly > 0 {
			b.ReportMetric(rate/ackOnly, "x-ack-only") // #15's target: >= 0.5
		}
		if putAsync > 0 {
			b.ReportMetric(rate/putAsync, "x-put-async")
		}
	})
}

// benchKVPut is BenchmarkProjector's side that puts each message's
// payload in a KV bucket from as many workers as the projector has.
func benchKVPut(b *testing.B, js jetstream.JetStream, store *jsstore.Store, n int, round *int) {
	stream := store.StreamName(aggregate.Context)
	cpu := cpuTime()
	for range b.N {
		*round++
		kv, err := OpenViews(b.Context(), js, WithBucket(fmt.Sprintf("raw-%d", *round)))
		if err != nil {
			b.Fatal(err)
		}
		cons, err := js.CreateOrUpdateConsumer(b.Context(), stream, jetstream.ConsumerConfig{
			Durable: fmt.Sprintf("raw-kv-%d", *round), AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024,
			FilterSubject: store.FilterSubject(aggregate.Context, aggregate.AggregateType),
		})
		if err != nil {
			b.Fatal(err)
		}
		work := make(chan jetstream.Msg, 1024)
		var got atomic.Int64
		done := make(chan struct{})
		var workers sync.WaitGroup
		for range defaultWorkers {
			workers.Go(func() {
				for m := range work {
					md, _ := m.Metadata()
					if _, err := kv.Put(context.Background(), fmt.Sprint(md.Sequence.Stream), m.Data()); err != nil {
						panic(err)
					}
					_ = m.Ack()
					if got.Add(1) == int64(n) {
						close(done)
					}
				}
			})
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { work <- m }, jetstream.PullMaxMessages(1024))
		if err != nil {
			b.Fatal(err)
		}
		<-done
		cc.Stop()
		<-cc.Closed()
		close(work)
		workers.Wait()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(n*b.N), "cpu-µs/msg")
}
