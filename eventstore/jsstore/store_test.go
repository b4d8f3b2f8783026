package jsstore_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

func TestLongHistoryLoadsInOrder(t *testing.T) {
	st, _, _ := newStore(t)
	a := order("long")
	const n = 10_000
	// Interleave another aggregate so the history is spread through the stream.
	other := order("noise")
	for v := uint64(0); v < n; v++ {
		_, err := st.Append(t.Context(), newStream(a, "step", map[string]uint64{"v": v + 1}), v)
		require.NoError(t, err)
		if v%10 == 0 {
			_, err = st.Append(t.Context(), newStream(other, "noise", map[string]uint64{}), v/10)
			require.NoError(t, err)
		}
	}
	all, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	require.Equal(t, seq(1, n), versions(all), "all 10 000 versions in order")

	tail, err := st.Load(t.Context(), a, n-20)
	require.NoError(t, err)
	assert.Equal(t, seq(n-20, n), versions(tail))

	for _, v := range []uint64{1, 2, n / 2, n - 16, n - 1, n} {
		got, err := st.LoadVersion(t.Context(), a, v)
		require.NoError(t, err, "version %d", v)
		assert.Equal(t, all[v-1], got, "LoadVersion(%d) equals the loaded history", v)
	}
}

func TestDataSurvivesARestart(t *testing.T) {
	st, _, srv := newStore(t)
	a := order("durable")
	want := appendN(t, st, a, 0, 5)

	srv = srv.Restart()
	st2, err := jsstore.New(srv.JetStream())
	require.NoError(t, err)
	got, err := st2.Load(t.Context(), a, 1)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the history after a restart is the one written before it")
	appendN(t, st2, a, 5, 1)
}

func TestProvisioning(t *testing.T) {
	srv := natstest.New(t)
	js := srv.JetStream()
	st, err := jsstore.New(js)
	require.NoError(t, err)
	require.NoError(t, st.Provision(t.Context(), "orders", "billing"))
	info, err := js.Stream(t.Context(), "AMENDS_orders")
	require.NoError(t, err)
	cfg := info.CachedInfo().Config
	assert.Equal(t, []string{"amends.orders.>"}, cfg.Subjects)
	assert.Equal(t, jetstream.FileStorage, cfg.Storage)
	assert.True(t, cfg.AllowDirect && cfg.DenyDelete && cfg.DenyPurge, "direct gets on, delete and purge denied")

	t.Run("compatible reopen is a no-op", func(t *testing.T) {
		again, err := jsstore.New(js)
		require.NoError(t, err)
		require.NoError(t, again.Provision(t.Context(), "orders"))
	})
	t.Run("incompatible settings are an error", func(t *testing.T) {
		mem, err := jsstore.New(js, jsstore.WithStorage(jetstream.MemoryStorage), jsstore.WithMaxMsgSize(2048))
		require.NoError(t, err)
		err = mem.Provision(t.Context(), "orders")
		require.ErrorIs(t, err, eventstore.ErrIncompatible)
		assert.ErrorContains(t, err, "storage File (wanted Memory)")
		assert.ErrorContains(t, err, "max message size 1048576 (wanted 2048)")
		_, err = mem.Append(t.Context(), newStream(order("x"), "e", map[string]int{}), 0)
		assert.ErrorIs(t, err, eventstore.ErrIncompatible, "operations on an incompatible stream fail")
		info, err := js.Stream(t.Context(), "AMENDS_orders")
		require.NoError(t, err)
		assert.Equal(t, jetstream.FileStorage, info.CachedInfo().Config.Storage, "the stream was not reconfigured")
	})
	t.Run("history-deleting limits are incompatible", func(t *testing.T) {
		cfg := st.StreamConfig("audit")
		cfg.MaxAge = 3600e9
		_, err := js.CreateStream(t.Context(), cfg)
		require.NoError(t, err)
		err = st.Provision(t.Context(), "audit")
		require.ErrorIs(t, err, eventstore.ErrIncompatible)
		assert.ErrorContains(t, err, "history must not expire")
	})
	t.Run("bad context name", func(t *testing.T) {
		err := st.Provision(t.Context(), "bad context")
		assert.ErrorIs(t, err, eventstore.ErrInvalid)
	})
	t.Run("bad options", func(t *testing.T) {
		_, err := jsstore.New(js, jsstore.WithReplicas(0))
		assert.ErrorIs(t, err, jsstore.ErrInvalidOption)
		_, err = jsstore.New(js, jsstore.WithSubjectPrefix("a.*"))
		assert.ErrorIs(t, err, jsstore.ErrInvalidOption)
	})
}

func TestIDsThatAreNotSubjectTokens(t *testing.T) {
	st, _, _ := newStore(t)
	ids := []string{"a.b", "with space", "*", ">", "订单-42", "~x", "x~", "a.*.>", "ünïcödé"}
	for _, id := range ids {
		appendN(t, st, order(id), 0, 2)
	}
	for _, id := range ids {
		got, err := st.Load(t.Context(), order(id), 1)
		require.NoError(t, err, id)
		require.Len(t, got, 2, "id %q has exactly its own streams", id)
		assert.Equal(t, id, got[0].Aggregate.ID)
	}
}
