package bench

import (
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
)

// Workers publishing batches larger than the window at once on one
// connection get every message in. (The stall this window prevents, 8
// workers' batches over the client's limit of 4000 pending publishes,
// needs acks that lag 200 ms, seen over TCP on a loaded machine; an
// in-process server acks too fast to show it.)
func TestPublishBatchesAtOnce(t *testing.T) {
	env := &Env{JS: natstest.New(t).JetStream(), Storage: jetstream.MemoryStorage, Prefix: "t"}
	st, closeFn, err := newStore(t.Context(), env, "pub")
	require.NoError(t, err)
	t.Cleanup(closeFn)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for w := range errs {
		wg.Go(func() { errs[w] = publishBatch(t.Context(), env.JS, st, "t"+string(rune('a'+w)), 3000) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	info, err := env.JS.Stream(t.Context(), st.StreamName(benchContext))
	require.NoError(t, err)
	require.EqualValues(t, 9000, info.CachedInfo().State.Msgs)
}
