package jsstore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

func newStore(tb testing.TB, opts ...jsstore.Option) (*jsstore.Store, jetstream.JetStream, *natstest.Server) {
	tb.Helper()
	srv := natstest.New(tb)
	js := srv.JetStream()
	st, err := jsstore.New(js, opts...)
	require.NoError(tb, err)
	return st, js, srv
}

func order(id string) eventstore.AggregateID {
	return eventstore.AggregateID{Context: "orders", Type: "order", ID: id}
}

// newStream builds a one-event stream with a fresh id.
func newStream(a eventstore.AggregateID, name string, body any) eventstore.Stream {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return eventstore.Stream{
		ID:         uuid.NewString(),
		Aggregate:  a,
		CommandID:  uuid.NewString(),
		CreateTime: 1735000000000,
		Events:     []eventstore.Event{{ID: uuid.NewString(), Name: name, Body: b}},
	}
}

// appendN appends n streams to a, numbered from the aggregate's current
// version, and returns the committed streams.
func appendN(tb testing.TB, st *jsstore.Store, a eventstore.AggregateID, from, n uint64) []eventstore.Stream {
	tb.Helper()
	out := make([]eventstore.Stream, 0, n)
	for v := from; v < from+n; v++ {
		c, err := st.Append(tb.Context(), newStream(a, "step", map[string]uint64{"n": v + 1}), v)
		require.NoError(tb, err, "append version %d", v+1)
		out = append(out, c)
	}
	return out
}

func versions(ss []eventstore.Stream) []uint64 {
	out := make([]uint64, len(ss))
	for i, s := range ss {
		out[i] = s.Version
	}
	return out
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

var _ = fmt.Sprint
