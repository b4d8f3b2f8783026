package jsstore_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

func TestACompressedContextsStreamIsCreatedWithS2(t *testing.T) {
	st, js, _ := newStore(t, jsstore.WithCompressed("orders"))
	appendN(t, st, order("o-1"), 0, 2)
	appendN(t, st, eventstore.AggregateID{Context: "billing", Type: "invoice", ID: "i-1"}, 0, 1)

	orders, err := js.Stream(t.Context(), st.StreamName("orders"))
	require.NoError(t, err)
	assert.Equal(t, jetstream.S2Compression, orders.CachedInfo().Config.Compression)
	billing, err := js.Stream(t.Context(), st.StreamName("billing"))
	require.NoError(t, err)
	assert.Equal(t, jetstream.NoCompression, billing.CachedInfo().Config.Compression, "only the contexts named are compressed")
	assert.Equal(t, jetstream.S2Compression, st.StreamConfig("orders").Compression)
}

// A stream written before compression was asked for keeps working: the
// compressed store provisions it as it is, Compress changes it in place
// after a dry run, and every message, old and new, reads back the same,
// also after the server restarts with the new configuration.
func TestAnExistingStreamIsCompressedInPlace(t *testing.T) {
	old, js, srv := newStore(t)
	before := appendN(t, old, order("o-1"), 0, 3)

	st, err := jsstore.New(js, jsstore.WithCompressed("orders"))
	require.NoError(t, err)
	require.NoError(t, st.Provision(t.Context(), "orders"), "an uncompressed stream is accepted as it is")

	dry, err := st.Compress(t.Context(), "orders", true)
	require.NoError(t, err)
	assert.Equal(t, jsstore.Compression{Stream: st.StreamName("orders"), From: "none", To: "s2", Messages: 3, Bytes: dry.Bytes}, dry)
	info, err := js.Stream(t.Context(), st.StreamName("orders"))
	require.NoError(t, err)
	require.Equal(t, jetstream.NoCompression, info.CachedInfo().Config.Compression, "a dry run changes nothing")

	done, err := st.Compress(t.Context(), "orders", false)
	require.NoError(t, err)
	assert.True(t, done.Changed)
	again, err := st.Compress(t.Context(), "orders", false)
	require.NoError(t, err)
	assert.False(t, again.Changed, "a compressed stream is left alone")
	assert.Equal(t, "s2", again.From)

	after := appendN(t, st, order("o-1"), 3, 2)
	js = srv.Restart().JetStream()
	reopened, err := jsstore.New(js, jsstore.WithCompressed("orders"))
	require.NoError(t, err)
	got, err := reopened.Load(t.Context(), order("o-1"), 1)
	require.NoError(t, err)
	require.Len(t, got, 5)
	for i, want := range append(before, after...) {
		assert.Equal(t, want.ID, got[i].ID)
		assert.Equal(t, want.Seq, got[i].Seq)
		assert.Equal(t, want.Events[0].Body, got[i].Events[0].Body)
	}
	info, err = js.Stream(t.Context(), reopened.StreamName("orders"))
	require.NoError(t, err)
	assert.Equal(t, jetstream.S2Compression, info.CachedInfo().Config.Compression)
}

func TestCompressRefusesWhatItCannotDo(t *testing.T) {
	st, _, _ := newStore(t, jsstore.WithCompressed("orders"))
	_, err := st.Compress(t.Context(), "orders", true)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "a stream never provisioned")
	_, err = st.Compress(t.Context(), "bad context", true)
	require.ErrorIs(t, err, eventstore.ErrInvalid)
	_, err = jsstore.New(nil, jsstore.WithCompressed("bad context"))
	require.ErrorIs(t, err, jsstore.ErrInvalidOption)
}
