package bench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The peer sides are what a Go team builds without amends: a Watermill
// router on JetStream through watermill-nats' pkg/nats (its documented,
// stable JetStream support), with the Retry and PoisonQueue middlewares
// and the requeuer component. They follow the configuration of
// watermill-nats' JetStream examples (deliver all, explicit acks,
// publishes without Nats-Msg-Id, 30 s ack wait and close timeouts), with
// three changes, each toward the other sides:
//
//   - the stream is created beforehand with the run's storage and
//     replicas (AutoProvision off): auto-provisioning makes a file
//     stream per topic whatever the run's settings;
//   - acks are asynchronous (AckAsync), as the processor's and the raw
//     consumer's are; the examples' synchronous ack waits a round trip
//     per message;
//   - a durable consumer and queue group per topic, which is what
//     watermill-nats says to set for JetStream when more than one
//     subscriber shares a topic.
type wmPeer struct {
	env    *Env
	stream string
	subj   string

	mu    sync.Mutex
	conns []*nats.Conn
}

// wmLogger keeps Watermill quiet, as discard keeps amends' components.
var wmLogger = watermill.NopLogger{}

// errNoDial is returned by a peer side's Prepare on an Env without Dial.
var errNoDial = errors.New("the peer side needs its own connections: set Env.Dial")

// newPeer creates the peer's stream, whose subjects are its topics.
func newPeer(ctx context.Context, env *Env, name string) (*wmPeer, error) {
	if env.Dial == nil {
		return nil, errNoDial
	}
	p := &wmPeer{env: env, stream: "BENCH_" + env.Prefix + "_" + name + "_WM", subj: "bench" + env.Prefix + name + "wm"}
	_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: p.stream, Subjects: []string{p.subj + ".>"},
		Storage: env.Storage, Replicas: max(env.Replicas, 1),
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// topic is the subject of a topic named by parts.
func (p *wmPeer) topic(parts ...string) string { return p.subj + "." + strings.Join(parts, "_") }

// close closes the peer's connections and deletes its stream.
func (p *wmPeer) close() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, nc := range conns {
		nc.Close()
	}
	_ = p.env.JS.DeleteStream(context.Background(), p.stream)
}

func (p *wmPeer) dial() (*nats.Conn, error) {
	nc, err := p.env.Dial()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.conns = append(p.conns, nc)
	p.mu.Unlock()
	return nc, nil
}

func (p *wmPeer) jetStreamConfig() wmnats.JetStreamConfig {
	return wmnats.JetStreamConfig{
		SubscribeOptions: []nats.SubOpt{nats.DeliverAll(), nats.AckExplicit()},
		AckAsync:         true,
		DurablePrefix:    "wm",
		DurableCalculator: func(prefix, topic string) string {
			return prefix + "_" + strings.ReplaceAll(topic, ".", "_")
		},
	}
}

// publisher is a Watermill publisher on a connection of its own.
func (p *wmPeer) publisher() (*wmnats.Publisher, error) {
	nc, err := p.dial()
	if err != nil {
		return nil, err
	}
	// NewPublisherWithNatsConn, unlike NewPublisher, sets no defaults: it
	// panics without a subject calculator.
	return wmnats.NewPublisherWithNatsConn(nc, wmnats.PublisherPublishConfig{
		Marshaler: &wmnats.NATSMarshaler{}, SubjectCalculator: wmnats.DefaultSubjectCalculator, JetStream: p.jetStreamConfig(),
	}, wmLogger)
}

// subscriber is a Watermill subscriber with n concurrent subscriptions per
// topic, on a connection of its own (closing it drains the connection).
func (p *wmPeer) subscriber(n int) (*wmnats.Subscriber, error) {
	nc, err := p.dial()
	if err != nil {
		return nil, err
	}
	return wmnats.NewSubscriberWithNatsConn(nc, wmnats.SubscriberSubscriptionConfig{
		Unmarshaler:      &wmnats.NATSMarshaler{},
		SubscribersCount: n,
		AckWaitTimeout:   30 * time.Second,
		CloseTimeout:     30 * time.Second,
		QueueGroupPrefix: "wm",
		JetStream:        p.jetStreamConfig(),
	}, wmLogger)
}

// deleteDurable deletes the durable consumer a subscriber made for topic.
func (p *wmPeer) deleteDurable(topic string) {
	name := p.jetStreamConfig().CalculateDurableName(topic)
	_ = p.env.JS.DeleteConsumer(context.Background(), p.stream, name)
}

// publishBatch publishes n Watermill messages (the NATS marshaler's
// format: the message's UUID and metadata in headers) to topic, pipelined,
// and waits for every acknowledgement. It stands for the service that
// produced the events; it runs untimed.
func (p *wmPeer) publishBatch(ctx context.Context, topic string, n int, payload []byte) error {
	futures := make([]jetstream.PubAckFuture, 0, publishWindow)
	marshaler := &wmnats.NATSMarshaler{}
	for range n {
		if len(futures) == publishWindow {
			if err := awaitAcks(ctx, &futures); err != nil {
				return err
			}
		}
		m, err := marshaler.Marshal(topic, message.NewMessage(watermill.NewUUID(), payload))
		if err != nil {
			return err
		}
		f, err := p.env.JS.PublishMsgAsync(m)
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	return awaitAcks(ctx, &futures)
}

// runRouter runs a Watermill router set up by setup until the returned
// stop is called, once its handlers are subscribed.
func runRouter(ctx context.Context, setup func(*message.Router) error) (stop func(), err error) {
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: 30 * time.Second}, wmLogger)
	if err != nil {
		return nil, err
	}
	if err := setup(r); err != nil {
		return nil, err
	}
	return runUntilStopped(ctx, r.Run, r.Running())
}

// runUntilStopped runs run in the background until the returned stop is
// called, once running is closed.
func runUntilStopped(ctx context.Context, run func(context.Context) error, running <-chan struct{}) (stop func(), err error) {
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(rctx) }()
	select {
	case <-running:
		return func() { cancel(); <-done }, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("the Watermill router stopped before it ran")
		}
		return nil, err
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	}
}

// countingPublisher counts the messages its publisher published.
type countingPublisher struct {
	message.Publisher
	n counter
}

func (c *countingPublisher) Publish(topic string, msgs ...*message.Message) error {
	err := c.Publisher.Publish(topic, msgs...)
	if err == nil {
		c.n.n.Add(uint64(len(msgs)))
	}
	return err
}
