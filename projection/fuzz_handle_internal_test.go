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

// fuzzMsg is a message as a consumer delivers it, with whatever subject,
// headers, body and delivery count the fuzzer makes; it counts how it was
// settled.
type fuzzMsg struct {
	subject         string
	header          nats.Header
	data            []byte
	seq, delivered  uint64
	acks, naks, ins int
	terms           int
}

func (m *fuzzMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq, Consumer: m.seq}, NumDelivered: m.delivered, Stream: "AMENDS_compensation", Consumer: DefaultDurable}, nil
}
func (m *fuzzMsg) Data() []byte                       { return m.data }
func (m *fuzzMsg) Headers() nats.Header               { return m.header }
func (m *fuzzMsg) Subject() string                    { return m.subject }
func (m *fuzzMsg) Reply() string                      { return "" }
func (m *fuzzMsg) Ack() error                         { m.acks++; return nil }
func (m *fuzzMsg) DoubleAck(context.Context) error    { m.acks++; return nil }
func (m *fuzzMsg) Nak() error                         { m.naks++; return nil }
func (m *fuzzMsg) NakWithDelay(time.Duration) error   { m.naks++; return nil }
func (m *fuzzMsg) InProgress() error                  { m.ins++; return nil }
func (m *fuzzMsg) Term() error                        { m.terms++; return nil }
func (m *fuzzMsg) TermWithReason(reason string) error { m.terms++; return nil }

var _ jetstream.Msg = (*fuzzMsg)(nil)

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
		EventID:  aggregate.EventID{ID: "evt-1", AggregateID: aggregate.AggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
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
		m := &fuzzMsg{subject: "amends.compensation.execution_failed." + rid, header: nats.Header{}, data: body, seq: seq, delivered: uint64(delivered)}
		for k, v := range map[string]string{jsstore.HeaderVersion: version, jsstore.HeaderFirstSeq: firstSeq, jsstore.HeaderPrevSeqs: prevSeqs} {
			if v != "" {
				m.header.Set(k, v)
			}
		}
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p.handle(hctx, m)
		if settled := m.acks + m.naks + m.terms; settled != 1 {
			t.Fatalf("settled %d times (acks %d, naks %d, terms %d), want once", settled, m.acks, m.naks, m.terms)
		}
		if m.naks == 1 && hctx.Err() == nil && uint64(delivered) >= 3 {
			t.Fatalf("redelivered after %d deliveries, beyond the retry bound of 3", delivered)
		}
		key, err := EncodeKey(rid)
		if err != nil {
			return
		}
		e, err := views.Get(ctx, key)
		if err != nil {
			return
		}
		if _, err := decodeView(e.Value()); err != nil {
			t.Fatalf("the projector wrote a view that does not read back: %v", err)
		}
	})
}
