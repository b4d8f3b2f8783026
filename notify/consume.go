package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/quarantine"
)

// The backoff between attempts to set up a consumer again.
const (
	consumerBackoffMin = 100 * time.Millisecond
	consumerBackoffMax = 10 * time.Second
)

// maxAckPending bounds the messages a notifier consumer holds.
const maxAckPending = 1024

func (n *Notifier) recordConsumer() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       n.opts.durable,
		Description:   "amends: delivers notifications of ExecutionFailed record events",
		FilterSubject: n.store.FilterSubject(aggregate.Context, aggregate.AggregateType),
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       n.opts.ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
}

// loop runs consume until ctx ends, setting it up again after a capped
// backoff whenever it stops.
func (n *Notifier) loop(ctx context.Context, name string, consume func(context.Context) error) {
	wait.Restart(ctx, consumerBackoffMin, consumerBackoffMax, consume, func(err error, _ int, backoff time.Duration) bool {
		n.opts.logger.Warn("notifier: consumer stopped; setting it up again", "consumer", name, "err", err, "backoff", backoff)
		return true
	})
}

// consume creates or updates the durable consumer cfg on stream and hands
// its messages to workers (by subject, so one record's messages stay in
// order) until ctx ends (nil) or the consumer stops (why). Messages held,
// queued or being delivered, are kept with InProgress.
func (n *Notifier) consume(ctx context.Context, stream string, cfg jetstream.ConsumerConfig, handle func(context.Context, jetstream.Msg)) error {
	if stream == n.store.StreamName(aggregate.Context) {
		if err := n.store.Provision(ctx, aggregate.Context); err != nil {
			return err
		}
	}
	cons, err := n.js.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", cfg.Durable, stream, err)
	}
	rt, err := inflight.New(inflight.Config{Name: cfg.Durable, Lanes: n.opts.workers, AckWait: n.opts.ackWait,
		MaxAckPending: cfg.MaxAckPending, Logger: n.opts.logger})
	if err != nil {
		return err
	}
	return rt.Consume(ctx, ctx, cons, func(ctx context.Context, _ *inflight.Lane, msgs []jetstream.Msg) {
		for _, m := range msgs {
			handle(ctx, m)
		}
	})
}

// retryPolicy is how a message whose handling failed transiently (the KV
// bucket or the store unavailable, recording a failure failed) is
// redelivered, and when it is quarantined instead.
func (n *Notifier) retryPolicy() quarantine.Retry { return n.opts.retry }

func deliveries(m jetstream.Msg) uint64 {
	if md, err := m.Metadata(); err == nil {
		return md.NumDelivered
	}
	return 1
}

// later hands m back for redelivery after a growing delay, or quarantines
// it once its deliveries are exhausted.
func (n *Notifier) later(ctx context.Context, m jetstream.Msg, consumer string, cause error) {
	if ctx.Err() != nil {
		_ = m.NakWithDelay(0)
		return
	}
	d := deliveries(m)
	if n.retryPolicy().Exhausted(d) {
		n.quarantine(ctx, m, consumer, quarantine.ReasonRetriesExhausted, cause)
		return
	}
	n.opts.logger.Warn("notifier: message not handled; redelivering", "subject", m.Subject(), "deliveries", d, "err", cause)
	_ = m.NakWithDelay(n.retryPolicy().Delay(d))
}

// quarantine records m and terminates it: a poison message never stalls
// the consumer. If the quarantine cannot record it, m is redelivered until
// its deliveries are exhausted.
func (n *Notifier) quarantine(ctx context.Context, m jetstream.Msg, consumer string, reason quarantine.Reason, cause error) {
	if q := n.opts.quarantine; q != nil {
		if err := q.Record(ctx, m, consumer, reason, cause); err != nil {
			if d := deliveries(m); ctx.Err() != nil || !n.retryPolicy().Exhausted(d) {
				n.opts.logger.Warn("notifier: cannot quarantine a message; redelivering", "subject", m.Subject(), "err", err)
				_ = m.NakWithDelay(n.retryPolicy().Delay(d))
				return
			}
			n.opts.logger.Error("notifier: message terminated; the quarantine could not record it", "subject", m.Subject(), "reason", string(reason), "cause", cause, "err", err)
		}
	}
	_ = m.Term()
}

// settleNote settles message m of a KV watch that read as note (ok false:
// nothing to notify), by the ack contract: undecodable (err) is
// quarantined and terminated, a note that cannot be delivered now is
// redelivered later, anything else is acked.
func (n *Notifier) settleNote(ctx context.Context, m jetstream.Msg, consumer string, note *Notification, ok bool, err error) {
	if err != nil {
		n.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable, err)
		return
	}
	if ok {
		if err := n.notify(ctx, nil, note); err != nil {
			n.later(ctx, m, consumer, err)
			return
		}
	}
	_ = m.Ack()
}
