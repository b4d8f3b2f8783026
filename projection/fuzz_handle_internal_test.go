package projection

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
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/quarantine"
)

// FuzzProjectorHandle feeds arbitrary subjects, position headers, bodies
// and delivery counts to the projector's handler, on a real JetStream
// holding one genuine record: it never panics, and settles every message
// exactly once, with a decision (ack, a redelivery, or quarantine and
// term). Every view it writes reads back. Each input runs against the
// server, so minimizing one takes long; run it with a short
// -fuzzminimizetime:
//
//	go test -run '^$' -fuzz FuzzProjectorHandle -fuzzminimizetime 2s ./projection
func FuzzProjectorHandle(f *testing.F) {
	js := natstest.New(f).JetStream()
	ctx := context.Background()
	store, err := jsstore.New(js)
	if err != nil {
		f.Fatal(err)
	}
	views, err := OpenViews(ctx, js)
	if err != nil {
		f.Fatal(err)
	}
	q, err := quarantine.New(js, quarantine.WithMemoryStorage(), quarantine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), 0))
	if err != nil {
		f.Fatal(err)
	}
	p, err := NewProjector(js, store, views, WithQuarantine(q), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		WithRetry(quarantine.Retry{Deliveries: 3}))
	if err != nil {
		f.Fatal(err)
	}
	svc := aggregate.NewService(store, aggregate.WithClock(aggregate.ClockFunc(func() time.Time { return time.UnixMilli(1_735_000_000_000) })))
	fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "onPlaced"}
	id := aggregate.RecordID("evt-1", fn)
	if _, err := svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "E", ErrorMsg: "boom"}, ExecuteAt: 1,
	}, aggregate.Meta{Actor: "fuzz"}); err != nil {
		f.Fatal(err)
	}
	genuine, err := store.LoadLast(ctx, eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: id})
	if err != nil {
		f.Fatal(err)
	}
	doc, err := eventstore.Encode(&genuine)
	if err != nil {
		f.Fatal(err)
	}
	_, prepared, _ := aggregate.EncodeEvent(aggregate.CompensationPrepared{Function: fn})
	forged := eventstore.Stream{ID: "forged", Aggregate: eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: "forged"}, Version: 1,
		Events: []eventstore.Event{{ID: "e", Name: aggregate.NameCompensationPrepared, Body: prepared}}}
	forgedDoc, err := eventstore.Encode(&forged)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(id, "1", "", "", doc, uint64(1), uint8(1))
	f.Add(id, "2", "1", "1", doc, uint64(7), uint8(1))
	f.Add("forged", "1", "", "", forgedDoc, uint64(9), uint8(1))
	f.Add("forged", "3", "1", "1", forgedDoc, uint64(9), uint8(3))
	f.Add(id, "1000000000000", "1", "1", doc, uint64(5), uint8(2))
	f.Add(id, "18446744073709551615", "1", "1,2,3", doc, uint64(50), uint8(1))
	f.Add("x", "1", "", "", []byte("{not json"), uint64(2), uint8(1))

	f.Fuzz(func(t *testing.T, rid, version, firstSeq, prevSeqs string, body []byte, seq uint64, delivered uint8) {
		m := &natstest.Msg{Subj: "amends.compensation.execution_failed." + rid, Header: nats.Header{}, Body: body, Seq: seq, Delivered: uint64(delivered),
			Stream: "AMENDS_compensation", Consumer: DefaultDurable}
		for k, v := range map[string]string{jsstore.HeaderVersion: version, jsstore.HeaderFirstSeq: firstSeq, jsstore.HeaderPrevSeqs: prevSeqs} {
			if v != "" {
				m.Header.Set(k, v)
			}
		}
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p.handle(hctx, m)
		acks, naks, terms, _ := m.Settled()
		if settled := acks + naks + terms; settled != 1 {
			t.Fatalf("settled %d times (acks %d, naks %d, terms %d), want once", settled, acks, naks, terms)
		}
		if naks == 1 && hctx.Err() == nil && uint64(delivered) >= 3 {
			t.Fatalf("redelivered after %d deliveries, beyond the retry bound of 3", delivered)
		}
		e, err := views.Lookup(ctx, rid)
		if err != nil || e.Operation() != jetstream.KeyValuePut {
			return
		}
		if _, err := decodeView(e.Value()); err != nil {
			t.Fatalf("the projector wrote a view that does not read back: %v", err)
		}
	})
}
