package bench

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

const benchContext = "orders"

// newStore returns a store whose streams and subjects belong to this run,
// with the streams of the given contexts (default: orders) provisioned, and
// a function that deletes them. The compensation stream is compressed, as
// serve and amends.New create it.
func newStore(ctx context.Context, env *Env, name string, contexts ...string) (*jsstore.Store, func(), error) {
	return newStoreWith(ctx, env, name, []jsstore.Option{jsstore.WithCompressed(aggregate.Context)}, contexts...)
}

// newStoreWith is newStore with more store options.
func newStoreWith(ctx context.Context, env *Env, name string, extra []jsstore.Option, contexts ...string) (*jsstore.Store, func(), error) {
	st, err := jsstore.New(env.JS, append([]jsstore.Option{
		jsstore.WithSubjectPrefix("bench" + env.Prefix + name),
		jsstore.WithStreamPrefix("BENCH_" + env.Prefix + "_" + name + "_"),
		jsstore.WithStorage(env.Storage),
		jsstore.WithReplicas(max(env.Replicas, 1))}, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	if len(contexts) == 0 {
		contexts = []string{benchContext}
	}
	closeFn := func() {
		for _, c := range contexts {
			_ = env.JS.DeleteStream(context.Background(), st.StreamName(c))
		}
		_ = env.JS.DeleteKeyValue(context.Background(), circuitBucket(env, name)) // if a processor opened it
	}
	if err := st.Provision(ctx, contexts...); err != nil {
		closeFn()
		return nil, nil, err
	}
	return st, closeFn, nil
}

// circuitBucket is the bucket of the circuits of bench name's processors,
// deleted with its streams.
func circuitBucket(env *Env, name string) string {
	return "bench_" + env.Prefix + "_" + name + "_circuits"
}

// circuitsOf is the option that gives a processor of bench name its own
// circuits bucket (the processors' default is the real one).
func circuitsOf(ctx context.Context, env *Env, name string) (processor.Option, error) {
	st, err := circuit.OpenStore(ctx, env.JS, circuit.WithBucket(circuitBucket(env, name)), circuit.WithStorage(env.Storage),
		circuit.WithReplicas(max(env.Replicas, 1)))
	if err != nil {
		return nil, err
	}
	return processor.WithCircuitStore(st), nil
}

func orderStream(id string, version uint64) eventstore.Stream {
	return eventstore.Stream{
		ID:         uuid.NewString(),
		Aggregate:  eventstore.AggregateID{Context: benchContext, Type: "order", ID: id},
		Version:    version,
		CommandID:  uuid.NewString(),
		CreateTime: 1735000000000,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "order_placed",
			Body: []byte(`{"sku":"A-1","qty":2,"price":1999}`)}},
	}
}

func prepareAppend(ctx context.Context, env *Env) (*Pair, error) {
	st, closeFn, err := newStore(ctx, env, "append")
	if err != nil {
		return nil, err
	}
	return &Pair{
		Close: closeFn,
		Raw: func(ctx context.Context, _, _ int) error {
			s := orderStream(uuid.NewString(), 1)
			data, err := eventstore.Encode(&s)
			if err != nil {
				return err
			}
			subj, _ := st.Subject(s.Aggregate)
			m := nats.NewMsg(subj)
			m.Data = data
			m.Header.Set(jetstream.MsgIDHeader, s.ID)
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
			m.Header.Set(jsstore.HeaderVersion, "1")
			_, err = env.JS.PublishMsg(ctx, m)
			return err
		},
		Amends: func(ctx context.Context, _, _ int) error {
			_, err := st.Append(ctx, orderStream(uuid.NewString(), 1), 0)
			return err
		},
	}, nil
}

func prepareLoad(ctx context.Context, env *Env) (*Pair, error) {
	st, closeFn, err := newStore(ctx, env, "load")
	if err != nil {
		return nil, err
	}
	const aggregates, versions = 1000, 5
	ids := make([]string, aggregates)
	seqs := make([][]uint64, aggregates)
	for i := range ids {
		ids[i] = "o-" + strconv.Itoa(i)
	}
	for v := range uint64(versions) {
		for i, id := range ids {
			c, err := st.Append(ctx, orderStream(id, v+1), v)
			if err != nil {
				closeFn()
				return nil, err
			}
			seqs[i] = append(seqs[i], c.Seq)
		}
	}
	stream, err := env.JS.Stream(ctx, st.StreamName(benchContext))
	if err != nil {
		closeFn()
		return nil, err
	}
	return &Pair{
		Close: closeFn,
		Raw: func(ctx context.Context, w, i int) error {
			k := (w*7919 + i) % aggregates
			subj, _ := st.Subject(eventstore.AggregateID{Context: benchContext, Type: "order", ID: ids[k]})
			if _, err := stream.GetLastMsgForSubject(ctx, subj); err != nil {
				return err
			}
			for _, s := range seqs[k][:versions-1] {
				if _, err := stream.GetMsg(ctx, s); err != nil {
					return err
				}
			}
			return nil
		},
		Amends: func(ctx context.Context, w, i int) error {
			k := (w*7919 + i) % aggregates
			got, err := st.Load(ctx, eventstore.AggregateID{Context: benchContext, Type: "order", ID: ids[k]}, 1)
			if err == nil && len(got) != versions {
				err = fmt.Errorf("loaded %d versions of %s, want %d", len(got), ids[k], versions)
			}
			return err
		},
	}, nil
}
