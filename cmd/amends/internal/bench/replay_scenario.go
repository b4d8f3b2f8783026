package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
)

func replayPool(env *Env) int {
	if env.Quick {
		return 20
	}
	return 200
}

// billing is the function replays target.
var billing = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: benchContext, ProcessorName: "Billing", Name: "charge"}

// A replay operation prepares a FAILED record and waits until the service
// replayed its event to the function and the record is SUCCEEDED: prepare
// (load, decide, append), the replay consumer, the original event fetched
// by sequence, the function, ApplyExecutionSuccess (load, decide, append).
// The raw side does the JetStream work that rests on: get-last and publish
// with the expected sequence, a consumer receiving it, a direct get of the
// original message, get-last and publish of the result; its sized twin
// does the same with messages as large as those amends writes and reads
// (the record's stream document: its event and state). The peer side
// publishes a poisoned message and waits until Watermill's requeuer moved
// it back and the handler took it (see wmReplay).
func prepareReplay(ctx context.Context, env *Env) (_ *Pair, err error) {
	var opened undo
	defer opened.onError(&err)
	r, err := newRig(ctx, env, "replay")
	if err != nil {
		return nil, err
	}
	opened.add(r.close)
	circuits, err := circuitsOf(ctx, env, "replay")
	if err != nil {
		return nil, err
	}
	p, err := processor.New(env.JS, r.store, benchContext, processor.WithRecorder(r.rec), processor.WithRecords(r.records), processor.WithLogger(discard), circuits)
	if err != nil {
		return nil, err
	}
	if err := p.Register(processor.Function{Processor: billing.ProcessorName, Name: billing.Name, AggregateTypes: []string{"order"}, Events: []string{"order_placed"}},
		func(context.Context, *processor.Delivery) error { return nil }); err != nil {
		return nil, err
	}
	stopProc, err := startProcessor(ctx, p)
	if err != nil {
		return nil, err
	}
	opened.add(stopProc)
	ids, seqs, creates, err := failedRecords(ctx, r, replayPool(env))
	if err != nil {
		return nil, err
	}
	raw, err := newRawReplay(ctx, env, r, "rawrecord", seqs, 0)
	if err != nil {
		return nil, err
	}
	opened.add(raw.stop)
	size, err := replayMessageSize(ctx, r, ids[0], creates[0])
	if err != nil {
		return nil, err
	}
	sized, err := newRawReplay(ctx, env, r, "sizedrecord", seqs, size)
	if err != nil {
		return nil, err
	}
	opened.add(sized.stop)
	payload, err := eventstore.Encode(new(orderStream("peer", 1)))
	if err != nil {
		return nil, err
	}
	pool := len(ids)
	peer, err := newWMReplay(ctx, env, pool, payload)
	if err != nil {
		return nil, err
	}
	opened.add(peer.stop)
	workers := max(env.Concurrency, 1)
	pick := func(w, i int) int { return (w + i*workers) % pool } // workers never share a record
	return &Pair{
		Close: opened.run,
		Notes: map[string]float64{"bytes of a record's message": float64(size)},
		Peer:  func(ctx context.Context, w, i int) error { return peer.cycle(ctx, pick(w, i)) },
		Before: func(ctx context.Context, side string, w, i int) error {
			if side != "amends" {
				return nil
			}
			k := pick(w, i)
			s, _, err := r.records.Get(ctx, ids[k])
			if err != nil || s.Status == aggregate.StatusFailed {
				return err
			}
			// Re-open the record its previous cycle left SUCCEEDED.
			c := creates[k]
			c.ExecuteAt = time.Now().UnixMilli()
			_, err = r.records.Execute(ctx, ids[k], c, aggregate.Meta{})
			return err
		},
		Raw:       func(ctx context.Context, w, i int) error { return raw.cycle(ctx, pick(w, i)) },
		Floor:     func(ctx context.Context, w, i int) error { return sized.cycle(ctx, pick(w, i)) },
		FloorName: "raw, same bytes",
		Amends: func(ctx context.Context, w, i int) error {
			id := ids[pick(w, i)]
			done := r.rec.expect("SUCCEEDED", id)
			if _, err := r.records.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "bench"}); err != nil {
				return err
			}
			return done.wait(ctx)
		},
	}, nil
}

// failedRecords appends n order events and a FAILED record of billing on
// each: the records' ids, the events' sequences and the records' creations.
func failedRecords(ctx context.Context, r *rig, n int) (ids []string, seqs []uint64, creates []aggregate.CreateExecutionFailed, err error) {
	ids, seqs, creates = make([]string, n), make([]uint64, n), make([]aggregate.CreateExecutionFailed, n)
	spec := aggregate.RetrySpec{MaxRetries: 1 << 30, MinBackoff: 0, ExecutionTimeout: 60}
	for k := range n {
		st, err := r.store.Append(ctx, orderStream("r-"+strconv.Itoa(k), 1), 0)
		if err != nil {
			return nil, nil, nil, err
		}
		seqs[k] = st.Seq
		creates[k] = aggregate.CreateExecutionFailed{
			EventID: aggregate.EventID{ID: st.Events[0].ID, Version: 1, Seq: st.Seq, AggregateID: aggregate.WireAggregateID{
				ContextName: benchContext, AggregateName: "order", AggregateID: st.Aggregate.ID, TenantID: aggregate.DefaultTenantID}},
			Function: billing, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "gateway timeout"},
			ExecuteAt: time.Now().UnixMilli(), RetrySpec: &spec,
		}
		ids[k] = aggregate.RecordID(st.Events[0].ID, billing)
		if _, err := r.records.Execute(ctx, ids[k], creates[k], aggregate.Meta{}); err != nil {
			return nil, nil, nil, err
		}
	}
	return ids, seqs, creates, nil
}

// replayMessageSize returns the bytes of a record's message in the
// scenario's steady state: record id taken through the cycle (re-open,
// prepare, success) until it holds as many command ids as it will.
func replayMessageSize(ctx context.Context, r *rig, id string, create aggregate.CreateExecutionFailed) (int, error) {
	for range 4 {
		done := r.rec.expect("SUCCEEDED", id)
		if _, err := r.records.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "bench"}); err != nil {
			return 0, err
		}
		if err := done.wait(ctx); err != nil {
			return 0, err
		}
		create.ExecuteAt = time.Now().UnixMilli()
		if _, err := r.records.Execute(ctx, id, create, aggregate.Meta{}); err != nil {
			return 0, err
		}
	}
	last, err := r.store.LoadLast(ctx, aggregate.RecordAggregate(id))
	if err != nil {
		return 0, err
	}
	data, err := eventstore.Encode(&last)
	return len(data), err
}

// rawReplay is the raw side of the replay scenario, on records of its own
// aggregate type; its prepare messages are padded to pad bytes.
type rawReplay struct {
	env    *Env
	r      *rig
	typ    string
	pad    int
	stream jetstream.Stream
	seqs   []uint64
	cc     jetstream.ConsumeContext
	sig    *signals
}

func (x *rawReplay) subject(k int) string {
	s, _ := x.r.store.Subject(eventstore.AggregateID{Context: aggregate.Context, Type: x.typ, ID: "k" + strconv.Itoa(k)})
	return s
}

func newRawReplay(ctx context.Context, env *Env, r *rig, typ string, seqs []uint64, pad int) (*rawReplay, error) {
	stream, err := env.JS.Stream(ctx, r.store.StreamName(aggregate.Context))
	if err != nil {
		return nil, err
	}
	orders, err := env.JS.Stream(ctx, r.store.StreamName(benchContext))
	if err != nil {
		return nil, err
	}
	x := &rawReplay{env: env, r: r, typ: typ, pad: pad, stream: stream, seqs: seqs, sig: &signals{}}
	cons, err := env.JS.CreateOrUpdateConsumer(ctx, stream.CachedInfo().Config.Name, jetstream.ConsumerConfig{
		Durable: typ + "_replay", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverNewPolicy,
		FilterSubject: r.store.FilterSubject(aggregate.Context, typ),
	})
	if err != nil {
		return nil, err
	}
	x.cc, err = cons.Consume(func(m jetstream.Msg) {
		defer func() { _ = m.Ack() }()
		if m.Headers().Get("Kind") != "prepare" {
			return
		}
		k, _ := strconv.Atoi(m.Headers().Get("Record"))
		if _, err := orders.GetMsg(context.Background(), x.seqs[k]); err != nil {
			return
		}
		if err := x.publish(context.Background(), k, "result", m.Data()); err != nil {
			return
		}
		x.sig.fire("SUCCEEDED/" + strconv.Itoa(k))
	}, jetstream.PullExpiry(5*time.Second))
	return x, err
}

// publish reads the last message of record k and publishes after it. On
// a replicated stream the direct get may come from a replica that lags,
// and the publish then fails with a wrong last sequence: like any writer
// with optimistic concurrency, it reads and publishes again.
func (x *rawReplay) publish(ctx context.Context, k int, kind string, data []byte) error {
	subj := x.subject(k)
	for attempt := 0; ; attempt++ {
		last := "0"
		if m, err := x.stream.GetLastMsgForSubject(ctx, subj); err == nil {
			last = strconv.FormatUint(m.Sequence, 10)
		}
		msg := nats.NewMsg(subj)
		msg.Data = data
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, last)
		msg.Header.Set(jetstream.MsgIDHeader, uuid.NewString())
		msg.Header.Set("Kind", kind)
		msg.Header.Set("Record", strconv.Itoa(k))
		_, err := x.env.JS.PublishMsg(ctx, msg)
		var apiErr *jetstream.APIError
		if err == nil || attempt >= 100 || !errors.As(err, &apiErr) ||
			apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence && apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant {
			return err
		}
	}
}

func (x *rawReplay) cycle(ctx context.Context, k int) error {
	done := x.sig.expect("SUCCEEDED", strconv.Itoa(k))
	data := fmt.Appendf(nil, `{"record":%d}`, k)
	if len(data) < x.pad {
		data = append(data, make([]byte, x.pad-len(data))...)
	}
	if err := x.publish(ctx, k, "prepare", data); err != nil {
		return err
	}
	return done.wait(ctx)
}

func (x *rawReplay) stop() { x.cc.Stop() }
