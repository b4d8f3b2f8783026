package jsstore_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

// BenchmarkDecodeMsg decodes one consumed message of version 2 by a call
// on *jsstore.Store ("concrete") and through the eventstore contract, as
// processor, projection and notify call it ("contract"): the interface
// call must not cost measurable time next to the decoding.
func BenchmarkDecodeMsg(b *testing.B) {
	st, js, _ := newStore(b)
	committed := appendN(b, st, order("bench"), 0, 2)
	cons, err := js.CreateOrUpdateConsumer(b.Context(), st.StreamName("orders"), jetstream.ConsumerConfig{
		FilterSubject: st.FilterSubject("orders", "order"), DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: committed[1].Seq,
	})
	require.NoError(b, err)
	m, err := cons.Next()
	require.NoError(b, err)
	var contract eventstore.Store[jetstream.Msg] = st
	b.Run("concrete", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.DecodeMsg(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("contract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := contract.DecodeMsg(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
