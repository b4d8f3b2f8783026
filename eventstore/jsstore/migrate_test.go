package jsstore_test

import (
	"os"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

func TestMigrateRemovableKeepsMessagesSequencesAndConsumers(t *testing.T) {
	// Given a stream created before its context was removable, with a
	// history and a durable consumer part way through it
	old, js, _ := newStore(t)
	a, b := order("o-1"), order("o-2")
	hist := appendN(t, old, a, 0, 3)
	appendN(t, old, b, 0, 4)
	name := old.StreamName("orders")
	cons, err := js.CreateOrUpdateConsumer(t.Context(), name, jetstream.ConsumerConfig{Durable: "projector", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	batch, err := cons.Fetch(3)
	require.NoError(t, err)
	for m := range batch.Messages() {
		require.NoError(t, m.DoubleAck(t.Context()))
	}
	before, err := js.Stream(t.Context(), name)
	require.NoError(t, err)
	st := before.CachedInfo().State

	// When it is migrated
	store, err := jsstore.New(js, jsstore.WithRemovable("orders"))
	require.NoError(t, err)
	dir := t.TempDir()
	m, err := store.MigrateRemovable(t.Context(), "orders", dir)
	require.NoError(t, err)

	// Then it allows purges, with every message at its sequence and the consumer where it was
	assert.True(t, m.Migrated)
	assert.Equal(t, st.Msgs, m.Messages)
	after, err := js.Stream(t.Context(), name)
	require.NoError(t, err)
	info := after.CachedInfo()
	assert.False(t, info.Config.DenyPurge, "the migrated stream allows purges")
	assert.True(t, info.Config.DenyDelete, "single deletes stay denied")
	assert.Equal(t, st.Msgs, info.State.Msgs)
	assert.Equal(t, st.FirstSeq, info.State.FirstSeq)
	assert.Equal(t, st.LastSeq, info.State.LastSeq)
	c, err := js.Consumer(t.Context(), name, "projector")
	require.NoError(t, err)
	ci, err := c.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(3), ci.AckFloor.Stream, "the consumer keeps its position")
	got, err := store.Load(t.Context(), b, 1)
	require.NoError(t, err)
	assert.Len(t, got, 4, "histories read as before")
	_, err = os.Stat(m.Backup)
	require.NoError(t, err, "the snapshot is kept")
	_, err = os.Stat(m.Backup + ".json")
	require.NoError(t, err, "with its configuration")

	// And Remove works on it
	n, err := store.Remove(t.Context(), a, hist[2].Seq)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), n)
	_, err = store.LoadLast(t.Context(), a)
	assert.ErrorIs(t, err, eventstore.ErrNotFound)

	// And a second migration does nothing
	m, err = store.MigrateRemovable(t.Context(), "orders", dir)
	require.NoError(t, err)
	assert.False(t, m.Migrated)
}
