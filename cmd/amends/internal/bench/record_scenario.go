package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// recordWorkers is how many failures are recorded at once on each side:
// eight failing functions, eight raw publishers.
const recordWorkers = 8

func recordBatch(env *Env) int {
	if env.Quick {
		return 200
	}
	return 2000
}

var errAlwaysFails = errors.New("bench: this function always fails")

// A record operation records a backlog of failures: the amends side runs a
// processor with eight lanes whose function always fails (no immediate
// retries), so each event becomes a CreateExecutionFailed; the raw side
// publishes the same number of record-sized messages to new subjects with
// an expected last subject sequence, from eight goroutines; its floor twin
// also does what the amends side must do on top of that: it receives each
// event from a consumer and acks it after its record is stored; the peer side
// runs a Watermill router with eight subscriptions whose handler always
// fails, behind the Retry middleware (no retries, as the amends side) and
// the PoisonQueue middleware, which publishes each failed message to a
// poison topic and acks it.
func prepareRecord(ctx context.Context, env *Env) (_ *Pair, err error) {
	var opened undo
	defer opened.onError(&err)
	st, closeFn, err := newStore(ctx, env, "record", benchContext, aggregate.Context)
	if err != nil {
		return nil, err
	}
	opened.add(closeFn)
	records := aggregate.NewService(st)
	// A real record's stream, for the raw side's payload.
	res, err := records.Execute(ctx, "sample", benchCreate("raw", 0, 0), aggregate.Meta{Actor: "recorder"})
	if err != nil {
		return nil, err
	}
	payload, err := eventstore.Encode(&res.Stream)
	if err != nil {
		return nil, err
	}
	peer, err := newPeer(ctx, env, "record")
	if err != nil {
		return nil, err
	}
	opened.add(peer.close)
	poisonPub, err := peer.publisher()
	if err != nil {
		return nil, err
	}
	orderPayload, err := eventstore.Encode(new(orderStream("peer", 1)))
	if err != nil {
		return nil, err
	}
	batch := recordBatch(env)
	last := &lastStop{}
	typ := func(w, i int) string { return fmt.Sprintf("f%d_%d", w, i) }
	floorTyp := func(w, i int) string { return "g" + typ(w, i) } // the floor's events, apart from the amends side's
	return &Pair{
		PerOp: batch,
		Close: func() { last.all(); opened.run() },
		Before: func(ctx context.Context, side string, w, i int) error {
			last.stop(w)
			switch side {
			case "raw":
				return nil
			case "peer":
				return peer.publishBatch(ctx, peer.topic(typ(w, i)), batch, orderPayload)
			case "floor":
				return publishBatch(ctx, env.JS, st, floorTyp(w, i), batch)
			}
			return publishBatch(ctx, env.JS, st, typ(w, i), batch)
		},
		Peer: func(ctx context.Context, w, i int) error {
			topic := peer.topic(typ(w, i))
			sub, err := peer.subscriber(recordWorkers)
			if err != nil {
				return err
			}
			poisoned := &countingPublisher{Publisher: poisonPub}
			poisonQueue, err := middleware.PoisonQueue(poisoned, peer.topic("poison"))
			if err != nil {
				return err
			}
			stop, err := runRouter(ctx, func(r *message.Router) error {
				// First added runs first: the poison queue takes what the
				// retries leave failed. No retries, as on the amends side.
				r.AddMiddleware(poisonQueue, middleware.Retry{MaxRetries: 0, Logger: wmLogger}.Middleware)
				r.AddConsumerHandler("charge", topic, sub, func(*message.Message) error { return errAlwaysFails })
				return nil
			})
			if err != nil {
				return err
			}
			last.set(w, func() { stop(); peer.deleteDurable(topic) })
			return waitCount(ctx, poisoned.n.load, uint64(batch))
		},
		Raw: func(ctx context.Context, w, i int) error {
			var wg sync.WaitGroup
			errs := make([]error, recordWorkers)
			for g := range recordWorkers {
				wg.Go(func() {
					for k := g; k < batch && errs[g] == nil; k += recordWorkers {
						errs[g] = publishRecord(ctx, env.JS, st, payload)
					}
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		},
		Floor: func(ctx context.Context, w, i int) error {
			return recordFloor(ctx, env, st, payload, floorTyp(w, i), batch, func(stop func()) { last.set(w, stop) })
		},
		FloorName: "raw, same work",
		Amends: func(ctx context.Context, w, i int) error {
			rec, err := recorder.New(records)
			if err != nil {
				return err
			}
			p, err := newRecordingProcessor(env, st, rec)
			if err != nil {
				return err
			}
			return last.runProcessor(ctx, env, st, w, p, charge("R"+typ(w, i), typ(w, i)), fail, nil, rec.Metrics().Recorded.Load, batch)
		},
	}, nil
}

// newRecordingProcessor is the processor of the record scenarios: its
// failures go to rec at once (no immediate retries, no circuit), on
// recordWorkers lanes.
func newRecordingProcessor(env *Env, st *jsstore.Store, rec *recorder.Recorder) (*processor.Processor, error) {
	return processor.New(env.JS, st, benchContext, processor.WithoutReplay(), processor.WithCircuitPolicy(circuit.Policy{Off: true}), processor.WithRecorder(rec),
		processor.WithImmediateRetry(processor.Retry{}), processor.WithConcurrency(recordWorkers), processor.WithLogger(discard))
}

// charge is the always failing function of processor name on
// order_placed events of aggregate type typ.
func charge(name, typ string) processor.Function {
	return processor.Function{Processor: name, Name: "charge", AggregateTypes: []string{typ}, Events: []string{"order_placed"}}
}

// fail is a handler that always fails.
func fail(context.Context, *processor.Delivery) error { return errAlwaysFails }

// publishRecord publishes a record-sized message to a new record's subject
// with an expected last subject sequence, as a creation appends.
func publishRecord(ctx context.Context, js jetstream.JetStream, st *jsstore.Store, payload []byte) error {
	subj, err := st.Subject(aggregate.RecordAggregate(uuid.NewString()))
	if err != nil {
		return err
	}
	m := nats.NewMsg(subj)
	m.Data = payload
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Header.Set(jetstream.MsgIDHeader, uuid.NewString())
	m.Header.Set(jsstore.HeaderVersion, strconv.Itoa(1))
	_, err = js.PublishMsg(ctx, m)
	return err
}

// recordFloor is the record scenario's floor: a durable consumer of the n
// events of aggregate type typ hands them to recordWorkers goroutines,
// each of which publishes a record (publishRecord) and then acks its
// event. It returns once every event is acked, or with the first error;
// keep gets how to stop and delete the consumer, which the next operation's
// Before does, untimed, as for the amends side's processor.
func recordFloor(ctx context.Context, env *Env, st *jsstore.Store, payload []byte, typ string, n int, keep func(stop func())) error {
	stream := st.StreamName(benchContext)
	durable := "floor_" + typ
	cons, err := env.JS.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: durable, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: st.FilterSubject(benchContext, typ),
		MaxAckPending: 1000,
	})
	if err != nil {
		return err
	}
	msgs := make(chan jetstream.Msg, n)
	cc, err := cons.Consume(func(m jetstream.Msg) { msgs <- m })
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		acked counter
		errc  = make(chan error, recordWorkers)
	)
	work, cancel := context.WithCancel(ctx)
	for range recordWorkers {
		wg.Go(func() {
			for {
				select {
				case <-work.Done():
					return
				case m := <-msgs:
					err := publishRecord(work, env.JS, st, payload)
					if err == nil {
						err = m.Ack()
					}
					if err != nil {
						errc <- err
						cancel()
						return
					}
					acked.add()
				}
			}
		})
	}
	keep(func() {
		cancel()
		cc.Stop()
		wg.Wait()
		_ = env.JS.DeleteConsumer(context.Background(), stream, durable)
	})
	if err := waitCount(work, acked.load, uint64(n)); err != nil {
		select {
		case werr := <-errc:
			return werr
		default:
			return err
		}
	}
	return nil
}
