package processor

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/quarantine"
)

// FuzzDispatchReplay feeds arbitrary subjects, position headers, bodies
// and delivery counts to the replay consumer's handler, on a real
// JetStream holding one genuine prepared record: it never panics, and
// decides ack, term (quarantined) or a redelivery, which it never asks
// for beyond the retry bound. Each input runs against the server; run it
// with a short -fuzzminimizetime:
//
//	go test -run '^$' -fuzz FuzzDispatchReplay -fuzzminimizetime 2s ./processor
func FuzzDispatchReplay(f *testing.F) {
	js := natstest.New(f).JetStream()
	ctx := context.Background()
	store, err := jsstore.New(js)
	if err != nil {
		f.Fatal(err)
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, err := quarantine.New(js, quarantine.WithMemoryStorage(), quarantine.WithLogger(discard, 0))
	if err != nil {
		f.Fatal(err)
	}
	clock := aggregate.ClockFunc(func() time.Time { return time.UnixMilli(1_735_000_000_000) })
	svc := aggregate.NewService(store, aggregate.WithClock(clock))
	p, err := New(js, store, "shop", WithRecords(svc), WithQuarantine(q), WithLogger(discard), WithClock(clock),
		WithReplayRetry(quarantine.Retry{Deliveries: 3}))
	if err != nil {
		f.Fatal(err)
	}
	if err := p.Register(Function{Processor: "Mailer", Name: "onPlaced", AggregateTypes: []string{"order"}}, func(context.Context, *Delivery) error { return nil }); err != nil {
		f.Fatal(err)
	}
	orig, err := store.Append(ctx, eventstore.Stream{ID: "s-1", Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}, CreateTime: 1,
		Events: []eventstore.Event{{ID: "evt-1", Name: "order_placed", Body: []byte(`{}`)}}}, 0)
	if err != nil {
		f.Fatal(err)
	}
	fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Mailer", Name: "onPlaced"}
	eid := aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "shop", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1, Seq: orig.Seq}
	id := aggregate.RecordID(eid.ID, fn)
	for _, c := range []aggregate.Command{
		aggregate.CreateExecutionFailed{EventID: eid, Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "E", ErrorMsg: "boom"}, ExecuteAt: 1},
		aggregate.ForcePrepareCompensation{},
	} {
		if _, err := svc.Execute(ctx, id, c, aggregate.Meta{Actor: "fuzz", Reason: "fuzz"}); err != nil {
			f.Fatal(err)
		}
	}
	prepared, err := store.LoadLast(ctx, eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: id})
	if err != nil {
		f.Fatal(err)
	}
	doc, err := eventstore.Encode(&prepared)
	if err != nil {
		f.Fatal(err)
	}
	_, body, _ := aggregate.EncodeEvent(aggregate.CompensationPrepared{EventID: eid, Function: fn, RetryState: aggregate.RetryState{Retries: 1}})
	forged := eventstore.Stream{ID: "forged", Aggregate: eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: "forged"}, Version: 3,
		Events: []eventstore.Event{{ID: "e", Name: aggregate.NameCompensationPrepared, Body: body}}}
	forgedDoc, err := eventstore.Encode(&forged)
	if err != nil {
		f.Fatal(err)
	}
	stream, err := js.Stream(ctx, store.StreamName(aggregate.Context))
	if err != nil {
		f.Fatal(err)
	}
	raw, err := stream.GetMsg(ctx, prepared.Seq)
	if err != nil {
		f.Fatal(err)
	}
	h := raw.Header
	// The fixture reaches the replay: the genuine message runs the function.
	genuine := &natstest.Msg{Subj: raw.Subject, Header: h, Body: raw.Data, Seq: raw.Sequence, Delivered: 1, Stream: "AMENDS_compensation", Consumer: "amends_replay_shop"}
	if d := p.replayOnce(ctx, genuine); d != ack || p.metrics.Replays.Load() != 1 || p.FunctionMetrics("Mailer", "onPlaced").Replayed.Load() != 1 {
		f.Fatalf("the genuine prepare: disposition %d, %d replays, want ack and 1", d, p.metrics.Replays.Load())
	}
	f.Add(id, h.Get(jsstore.HeaderVersion), h.Get(jsstore.HeaderFirstSeq), h.Get(jsstore.HeaderPrevSeqs), doc, prepared.Seq, uint8(1))
	f.Add("forged", "3", "1", "1", forgedDoc, uint64(40), uint8(1))
	f.Add("forged", "3", "1", "2,1", forgedDoc, uint64(40), uint8(3))
	f.Add("forged", "1000000000000", "1", "1", forgedDoc, uint64(40), uint8(1))
	f.Add("x", "1", "", "", []byte("{not json"), uint64(2), uint8(1))

	f.Fuzz(func(t *testing.T, rid, version, firstSeq, prevSeqs string, data []byte, seq uint64, delivered uint8) {
		m := &natstest.Msg{Subj: "amends.compensation.execution_failed." + rid, Header: nats.Header{}, Body: data, Seq: seq, Delivered: uint64(delivered),
			Stream: "AMENDS_compensation", Consumer: "amends_replay_shop"}
		for k, v := range map[string]string{jsstore.HeaderVersion: version, jsstore.HeaderFirstSeq: firstSeq, jsstore.HeaderPrevSeqs: prevSeqs} {
			if v != "" {
				m.Header.Set(k, v)
			}
		}
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		switch d := p.replayOnce(hctx, m); d {
		case ack, term:
		case nak:
			if hctx.Err() == nil && delivered >= 3 {
				t.Fatalf("redelivered after %d deliveries, beyond the retry bound of 3", delivered)
			}
		case interrupted:
			if hctx.Err() == nil {
				t.Fatal("interrupted while not stopping")
			}
		default:
			t.Fatalf("disposition %d", d)
		}
	})
}

// replayOnce runs the replay consumer's handler on m, on a lane of its
// own, and returns how it settled m (-1: not settled).
func (p *Processor) replayOnce(ctx context.Context, m jetstream.Msg) disposition {
	r, err := p.newRunner(p.store.StreamName(aggregate.Context), p.replayConfig(), 1, &p.metrics.Replay)
	if err != nil {
		panic(err)
	}
	got := disposition(-1)
	r.backoff, r.settled = true, func(d disposition) { got = d }
	lane := inflight.NewLane()
	p.dispatchReplay(ctx, newLaneState(r, lane, context.Background()), inflight.Hold(m))
	for { // the recordings in the background, and the tasks they resume
		r.background.Wait()
		if lane.RunPosted(ctx) == 0 {
			return got
		}
	}
}
