package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// processorLanes is the processor's default number of lanes; the peer
// side gets as many concurrent subscriptions.
const processorLanes = 16

// dispatchBatch is how many messages one dispatch operation consumes.
func dispatchBatch(env *Env) int {
	if env.Quick {
		return 500
	}
	return 5000
}

// A dispatch operation consumes a backlog of messages published (untimed)
// just before it, under an aggregate type of its own: the raw side with a
// new nats.go consumer acking each message, the amends side with a new
// processor calling a trivial function, the peer side with a new Watermill
// router (16 subscriptions, as many as the processor's lanes) calling a
// trivial handler. Every side includes creating its consumer, which the
// batch size makes small.
func prepareDispatch(ctx context.Context, env *Env) (_ *Pair, err error) {
	var opened undo
	defer opened.onError(&err)
	st, closeFn, err := newStore(ctx, env, "dispatch")
	if err != nil {
		return nil, err
	}
	opened.add(closeFn)
	peer, err := newPeer(ctx, env, "dispatch")
	if err != nil {
		return nil, err
	}
	opened.add(peer.close)
	payload, err := eventstore.Encode(new(orderStream("peer", 1)))
	if err != nil {
		return nil, err
	}
	batch := dispatchBatch(env)
	last := &lastStop{}
	typ := func(side string, w, i int) string { return fmt.Sprintf("%s%d_%d", side[:1], w, i) }
	return &Pair{
		PerOp: batch,
		Close: func() { last.all(); opened.run() },
		Before: func(ctx context.Context, side string, w, i int) error {
			last.stop(w)
			if side == "peer" {
				return peer.publishBatch(ctx, peer.topic(typ(side, w, i)), batch, payload)
			}
			return publishBatch(ctx, env.JS, st, typ(side, w, i), batch)
		},
		Peer: func(ctx context.Context, w, i int) error {
			topic := peer.topic(typ("peer", w, i))
			sub, err := peer.subscriber(processorLanes)
			if err != nil {
				return err
			}
			handled := &counter{}
			stop, err := runRouter(ctx, func(r *message.Router) error {
				r.AddConsumerHandler("onPlaced", topic, sub, func(*message.Message) error { handled.add(); return nil })
				return nil
			})
			if err != nil {
				return err
			}
			last.set(w, func() { stop(); peer.deleteDurable(topic) })
			return waitCount(ctx, handled.load, uint64(batch))
		},
		Raw: func(ctx context.Context, w, i int) error {
			name := "raw_" + typ("raw", w, i)
			cons, err := env.JS.CreateOrUpdateConsumer(ctx, st.StreamName(benchContext), jetstream.ConsumerConfig{
				Durable: name, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024,
				FilterSubject: st.FilterSubject(benchContext, typ("raw", w, i)),
			})
			if err != nil {
				return err
			}
			acked := &counter{}
			cc, err := cons.Consume(func(m jetstream.Msg) {
				if m.Ack() == nil {
					acked.add()
				}
			}, jetstream.PullMaxMessages(500), jetstream.PullExpiry(5*time.Second))
			if err != nil {
				return err
			}
			last.set(w, func() { cc.Stop(); _ = env.JS.DeleteConsumer(context.Background(), st.StreamName(benchContext), name) })
			return waitCount(ctx, acked.load, uint64(batch))
		},
		Amends: func(ctx context.Context, w, i int) error {
			p, err := newDispatchProcessor(ctx, env, st, "dispatch")
			if err != nil {
				return err
			}
			return last.runProcessor(ctx, env, st, w, p, onPlaced("P"+typ("amends", w, i), typ("amends", w, i)), succeed, nil, p.Metrics().Acked.Load, batch)
		},
	}, nil
}

// newDispatchProcessor is the processor of the dispatch scenarios: no
// replays, the circuits of the scenario named bucket, and opts.
func newDispatchProcessor(ctx context.Context, env *Env, st *jsstore.Store, bucket string, opts ...processor.Option) (*processor.Processor, error) {
	circuits, err := circuitsOf(ctx, env, bucket)
	if err != nil {
		return nil, err
	}
	return processor.New(env.JS, st, benchContext, append([]processor.Option{processor.WithoutReplay(), processor.WithLogger(discard), circuits}, opts...)...)
}

// onPlaced is the function of processor name on order_placed events of
// aggregate type typ.
func onPlaced(name, typ string) processor.Function {
	return processor.Function{Processor: name, Name: "onPlaced", AggregateTypes: []string{typ}, Events: []string{"order_placed"}}
}

// succeed is a handler that does nothing.
func succeed(context.Context, *processor.Delivery) error { return nil }

// startProcessor runs p until the returned stop is called, once it is ready.
func startProcessor(ctx context.Context, p *processor.Processor) (stop func(), err error) {
	pctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	select {
	case <-p.Ready():
		return func() { cancel(); <-done }, nil
	case err := <-done:
		cancel()
		return nil, err
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	}
}
