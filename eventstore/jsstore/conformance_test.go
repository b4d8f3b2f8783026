package jsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/eventstoretest"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// conformanceMaxMsgSize is the max message size of the stores the suite
// runs on: small, so that the oversized check stays cheap.
const conformanceMaxMsgSize = 4096

// TestConformance runs the eventstore contract's suite on a Store, each
// check on its own in-process JetStream, with file and memory storage.
func TestConformance(t *testing.T) {
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(storage.String(), func(t *testing.T) {
			eventstoretest.Run(t, func(t *testing.T) eventstoretest.Harness[jetstream.Msg] {
				st, js, _ := newStore(t, jsstore.WithStorage(storage), jsstore.WithMaxMsgSize(conformanceMaxMsgSize))
				return eventstoretest.Harness[jetstream.Msg]{
					Store:          st,
					Subscribe:      orderedSubscribe(js, st),
					WriteRaw:       rawWriter(js, st),
					MaxStreamBytes: conformanceMaxMsgSize,
					SubjectOf:      jetstream.Msg.Subject,
				}
			})
		})
	}
}

// orderedSubscribe receives the store's log with an ordered consumer that
// starts at the given sequence, as processor, projection and notify
// receive it with their durable consumers.
func orderedSubscribe(js jetstream.JetStream, st *jsstore.Store) func(ctx context.Context, boundedContext, aggregateType string, from uint64, n int) ([]jetstream.Msg, error) {
	return func(ctx context.Context, boundedContext, aggregateType string, from uint64, n int) ([]jetstream.Msg, error) {
		c, err := js.OrderedConsumer(ctx, st.StreamName(boundedContext), jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{st.FilterSubject(boundedContext, aggregateType)},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    from,
		})
		if err != nil {
			return nil, err
		}
		var out []jetstream.Msg
		for len(out) < n && ctx.Err() == nil {
			batch, err := c.Fetch(n-len(out), jetstream.FetchMaxWait(time.Second))
			if err != nil {
				return out, err
			}
			for m := range batch.Messages() {
				out = append(out, m)
			}
		}
		return out, ctx.Err()
	}
}

// rawWriter publishes data on the aggregate's subject without the store's
// headers: a message another program wrote.
func rawWriter(js jetstream.JetStream, st *jsstore.Store) func(ctx context.Context, a eventstore.AggregateID, data []byte) (uint64, error) {
	return func(ctx context.Context, a eventstore.AggregateID, data []byte) (uint64, error) {
		subj, err := st.Subject(a)
		if err != nil {
			return 0, err
		}
		if err := st.Provision(ctx, a.Context); err != nil {
			return 0, err
		}
		ack, err := js.Publish(ctx, subj, data)
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
}
