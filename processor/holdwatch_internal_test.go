package processor

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
)

// watchedKV is a bucket whose watches the test can see and hold back:
// every Watch after the first waits until release is closed.
type watchedKV struct {
	jetstream.KeyValue
	mu      sync.Mutex
	watches []jetstream.KeyWatcher
	release chan struct{}
}

func (kv *watchedKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	kv.mu.Lock()
	n := len(kv.watches)
	kv.mu.Unlock()
	if n > 0 {
		select {
		case <-kv.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w, err := kv.KeyValue.Watch(ctx, keys, opts...)
	if err == nil {
		kv.mu.Lock()
		kv.watches = append(kv.watches, w)
		kv.mu.Unlock()
	}
	return w, err
}

func (kv *watchedKV) count() int {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return len(kv.watches)
}

// A lost watch of the holds is started again, and what changed while no
// watch ran reaches the cache: a new hold, and a hold deleted with no
// trace left in the bucket (its deletion marker purged), which the new
// watch never delivers.
func TestALostHoldWatchIsStartedAgainAndCatchesUp(t *testing.T) {
	js := natstest.New(t).JetStream()
	ctx := t.Context()
	raw, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "holds_watch", History: 5})
	require.NoError(t, err)
	kv := &watchedKV{KeyValue: raw, release: make(chan struct{})}
	put := func(key, head string) {
		t.Helper()
		b, err := json.Marshal(api.Hold{Context: "shop", Head: api.HoldHead{Record: head}})
		require.NoError(t, err)
		_, err = raw.Put(ctx, key, b)
		require.NoError(t, err)
	}
	c := newHoldCache()
	c.decode = func(e jetstream.KeyValueEntry) (api.Hold, error) {
		var h api.Hold
		return h, json.Unmarshal(e.Value(), &h)
	}
	put("shop.P.f.order.gone", "r-gone")
	put("shop.P.f.order.kept", "r-kept")

	loop, err := watchHolds(ctx, js, kv, "shop", c, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.True(t, c.held("shop.P.f.order.gone") && c.held("shop.P.f.order.kept"), "the present holds are read before watchHolds returns")
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(ctx)
	}()
	t.Cleanup(func() { <-done }) // t.Context ends before the cleanups run

	kv.mu.Lock()
	first := kv.watches[0]
	kv.mu.Unlock()
	require.NoError(t, first.Stop()) // the watch is lost

	// While no watch runs: a hold deleted without a trace, a new one.
	require.NoError(t, raw.Purge(ctx, "shop.P.f.order.gone"))
	require.NoError(t, raw.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)))
	put("shop.P.f.order.new", "r-new")
	close(kv.release)

	testwait.For(t, "the watch started again and caught up", func() bool {
		return kv.count() == 2 && !c.held("shop.P.f.order.gone") && c.held("shop.P.f.order.new")
	})
	require.True(t, c.held("shop.P.f.order.kept"))
	_, ok := c.byRecord("r-gone")
	require.False(t, ok, "the dropped hold's head is forgotten too")

	put("shop.P.f.order.later", "r-later") // the new watch follows
	testwait.For(t, "a later hold reaches the cache", func() bool { return c.held("shop.P.f.order.later") })
}
