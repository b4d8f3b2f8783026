package bench

import (
	"context"
	"strconv"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/requeuer"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// replayLanes is the processor's default number of replays at once; the
// peer's handler and requeuer get as many subscriptions.
const replayLanes = 4

// recordKey is the metadata that says which poisoned message a handled
// one is (the peer's stand-in for a record id).
const recordKey = "bench_record"

// wmReplay is the peer side of the replay scenario: a Watermill router
// whose handler succeeds, and Watermill's requeuer moving every message
// that reaches the poison topic back to the topic it was poisoned on
// (taken from the PoisonQueue middleware's metadata), without delay as
// the amends side replays with 0 s backoff. A cycle publishes one poisoned
// message, as the PoisonQueue middleware does, and waits until the
// handler took it again.
type wmReplay struct {
	peer     *wmPeer
	pub      message.Publisher
	poison   string
	orders   string
	payload  []byte
	msgIDs   []string
	sig      *signals
	stopping []func()
}

func newWMReplay(ctx context.Context, env *Env, pool int, payload []byte) (x *wmReplay, err error) {
	peer, err := newPeer(ctx, env, "replay")
	if err != nil {
		return nil, err
	}
	x = &wmReplay{peer: peer, poison: peer.topic("poison"), orders: peer.topic("orders"), payload: payload, sig: &signals{}}
	defer func() {
		if err != nil {
			x.stop()
		}
	}()
	for range pool {
		x.msgIDs = append(x.msgIDs, watermill.NewUUID())
	}
	if x.pub, err = peer.publisher(); err != nil {
		return nil, err
	}
	sub, err := peer.subscriber(replayLanes)
	if err != nil {
		return nil, err
	}
	stop, err := runRouter(ctx, func(r *message.Router) error {
		r.AddConsumerHandler("charge", x.orders, sub, func(m *message.Message) error {
			x.sig.fire("SUCCEEDED/" + m.Metadata.Get(recordKey))
			return nil
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	x.stopping = append(x.stopping, stop)
	rsub, err := peer.subscriber(replayLanes)
	if err != nil {
		return nil, err
	}
	rpub, err := peer.publisher()
	if err != nil {
		return nil, err
	}
	router, err := message.NewRouter(message.RouterConfig{}, wmLogger)
	if err != nil {
		return nil, err
	}
	rq, err := requeuer.NewRequeuer(requeuer.Config{
		Subscriber: rsub, SubscribeTopic: x.poison, Publisher: rpub, Router: router,
		GeneratePublishTopic: func(p requeuer.GeneratePublishTopicParams) (string, error) {
			return p.Message.Metadata.Get(middleware.PoisonedTopicKey), nil
		},
	}, wmLogger)
	if err != nil {
		return nil, err
	}
	stop, err = runUntilStopped(ctx, rq.Run, router.Running())
	if err != nil {
		return nil, err
	}
	x.stopping = append(x.stopping, stop)
	return x, nil
}

// cycle poisons message k and waits until the handler had it again.
func (x *wmReplay) cycle(ctx context.Context, k int) error {
	done := x.sig.expect("SUCCEEDED", strconv.Itoa(k))
	m := message.NewMessage(x.msgIDs[k], x.payload)
	m.Metadata.Set(recordKey, strconv.Itoa(k))
	m.Metadata.Set(middleware.ReasonForPoisonedKey, "gateway timeout")
	m.Metadata.Set(middleware.PoisonedTopicKey, x.orders)
	m.Metadata.Set(middleware.PoisonedHandlerKey, "charge")
	m.Metadata.Set(middleware.PoisonedSubscriberKey, "nats")
	if err := x.pub.Publish(x.poison, m); err != nil {
		return err
	}
	return done.wait(ctx)
}

// stop stops the routers, closes the connections and deletes the stream.
func (x *wmReplay) stop() {
	for _, stop := range x.stopping {
		stop()
	}
	x.peer.close()
}
