package projection_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
)

// breakableViews is the real views bucket whose watches a test can end,
// as a closed connection or a lost subscription ends them, and whose new
// watches it can make fail.
type breakableViews struct {
	jetstream.KeyValue

	mu       sync.Mutex
	fail     error
	watchers []jetstream.KeyWatcher
	calls    int
}

func (b *breakableViews) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if b.fail != nil {
		return nil, b.fail
	}
	w, err := b.KeyValue.WatchAll(ctx, opts...)
	if err == nil {
		b.watchers = append(b.watchers, w)
	}
	return w, err
}

// breakWatches ends every running watch and makes new ones fail until
// mend.
func (b *breakableViews) breakWatches(tb testing.TB) {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = errors.New("test: watches are broken")
	for _, w := range b.watchers {
		require.NoError(tb, w.Stop())
	}
	b.watchers = nil
}

func (b *breakableViews) mend() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = nil
}

func (b *breakableViews) watchCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func waitHealthy(tb testing.TB, ix *projection.Index) {
	tb.Helper()
	require.Eventually(tb, func() bool { return ix.Healthy() == nil }, 30*time.Second, 5*time.Millisecond,
		"the index becomes current again; last: %v", ix.Healthy())
}

func TestIndexRestartsItsWatchAndEqualsAFreshLoad(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	views := &breakableViews{KeyValue: e.views.KeyValue}
	ix, err := projection.NewIndex(wrapViews(t, e, views), e.store, projection.WithClock(e.clock))
	require.NoError(t, err)
	require.ErrorIs(t, ix.Healthy(), projection.ErrNotCurrent, "not loaded before Run")
	run(t, ix)
	populate(t, e, ix, 0, 30)
	changed, deleted, vanished := e.create(t, evt(100), fnA, "E", nil), e.create(t, evt(101), fnA, "E", nil), e.create(t, evt(102), fnA, "E", nil)
	for _, id := range []string{changed, deleted, vanished} {
		require.NoError(t, ix.WaitFor(t.Context(), id, 1))
	}
	waitHealthy(t, ix)
	_, err = e.views.Put(t.Context(), "corrupt-1", []byte("not a view"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ix.Corrupt() == 1 }, 30*time.Second, 5*time.Millisecond)
	before := ix.Len()

	views.breakWatches(t)
	require.Eventually(t, func() bool { return views.watchCalls() >= 3 }, 30*time.Second, 5*time.Millisecond,
		"the index keeps trying to watch")
	assert.ErrorIs(t, ix.Healthy(), projection.ErrNotCurrent, "stale while the watch is down")
	assert.Equal(t, before, ix.Len(), "the index keeps serving what it has")

	// While no watch runs: records change and appear, one view is deleted,
	// one vanishes from the bucket without a trace (a purge of its subject
	// in the stream), a corrupt value is replaced and another one appears.
	want := map[string]uint64{}
	for i := 30; i < 35; i++ {
		id, v := lifecycle(t, e, i)
		want[id] = v
	}
	r := e.exec(t, changed, aggregate.ForcePrepareCompensation{})
	want[changed] = r.Version
	e.waitViews(t, want)
	require.NoError(t, e.views.Delete(t.Context(), keyOf(t, e.views, deleted)))
	key := keyOf(t, e.views, vanished)
	stream, err := e.js.Stream(t.Context(), "KV_"+projection.DefaultBucket)
	require.NoError(t, err)
	require.NoError(t, stream.Purge(t.Context(), jetstream.WithPurgeSubject("$KV."+projection.DefaultBucket+"."+key)))
	_, err = e.views.Put(t.Context(), "corrupt-1", []byte("still not a view"))
	require.NoError(t, err)
	_, err = e.views.Put(t.Context(), "corrupt-2", []byte("not a view either"))
	require.NoError(t, err)

	views.mend()
	waitHealthy(t, ix)
	fresh := e.index(t)
	run(t, fresh)
	<-fresh.Ready()
	assert.Equal(t, fresh.Len(), ix.Len())
	assert.Equal(t, before+5-2, ix.Len(), "5 new records, 1 deleted, 1 vanished")
	assert.Equal(t, answers(t, fresh), answers(t, ix), "after the restart the index answers like a fresh load")
	assert.Equal(t, uint64(2), ix.Corrupt(), "corrupt values counted once each however often they are replayed")
	assert.Equal(t, fresh.Corrupt(), ix.Corrupt())

	// And it follows later writes.
	id, v := lifecycle(t, e, 40)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, ix.WaitFor(ctx, id, v), "a write after the restart reaches the index")
}

func TestIndexRunWaitsForAWatchThatCannotStart(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	views := &breakableViews{KeyValue: e.views.KeyValue}
	views.breakWatches(t)
	ix, err := projection.NewIndex(wrapViews(t, e, views), e.store, projection.WithClock(e.clock))
	require.NoError(t, err)
	run(t, ix)
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})
	require.Eventually(t, func() bool { return views.watchCalls() >= 2 }, 30*time.Second, 5*time.Millisecond)
	select {
	case <-ix.Ready():
		t.Fatal("ready without a watch")
	default:
	}
	views.mend()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, ix.WaitFor(ctx, id, 1))
	waitHealthy(t, ix)
}

func TestProjectorRecreatesItsDeletedConsumer(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})

	require.NoError(t, e.js.DeleteConsumer(t.Context(), e.store.StreamName(aggregate.Context), projection.DefaultDurable))
	other := e.create(t, evt(2), fnA, "E", nil)
	r := e.exec(t, id, aggregate.ForcePrepareCompensation{})
	e.waitViews(t, map[string]uint64{id: r.Version, other: 1})
}

func TestInvalidIDsNeverReachNATS(t *testing.T) {
	e := newEnv(t)
	nc := e.js.Conn()
	ix := e.index(t)
	run(t, ix)
	for name, id := range map[string]string{
		"4000 characters": strings.Repeat("a", 4000),
		"257 bytes":       strings.Repeat("é", 128) + "x",
		"empty":           "",
		"control":         "a\x00b",
		"not UTF-8":       "\xff\xfe",
	} {
		_, err := ix.Get(t.Context(), id)
		assert.ErrorIs(t, err, projection.ErrInvalidQuery, "Get %s", name)
		_, err = ix.History(t.Context(), id)
		assert.ErrorIs(t, err, projection.ErrInvalidQuery, "History %s", name)
		_, err = projection.GetView(t.Context(), e.views, id)
		assert.ErrorIs(t, err, projection.ErrInvalidQuery, "GetView %s", name)
		assert.True(t, nc.IsConnected(), "still connected after %s", name)
	}
	_, err := ix.Get(t.Context(), "missing")
	assert.ErrorIs(t, err, projection.ErrNotFound, "the connection still works")
	waitHealthy(t, ix)
}

// The views bucket is deleted and created again under a running index (an
// operator rebuilding the read model): its sequence numbers start again
// at 1, which the watch alone would not notice. The index loads the new
// bucket, without the records of the old one.
func TestIndexFollowsARecreatedBucket(t *testing.T) {
	e := newEnv(t)
	stopProjector := run(t, e.projector(t))
	ix := e.index(t, projection.WithBucketCheck(20*time.Millisecond))
	run(t, ix)
	populate(t, e, ix, 0, 10)
	e.drained(t)
	stopProjector()

	require.NoError(t, e.js.DeleteKeyValue(t.Context(), projection.DefaultBucket))
	views := natstest.Recreate(t, func() (*projection.Views, error) { return projection.OpenViews(t.Context(), e.js) })
	e.views = views
	_, err := views.Put(t.Context(), "corrupt-1", []byte("not a view"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ix.Len() == 0 && ix.Corrupt() == 1 }, 30*time.Second, 5*time.Millisecond,
		"the index holds what the new bucket holds")
	waitHealthy(t, ix)

	// Re-project into the new bucket; the index follows it.
	require.NoError(t, e.js.DeleteConsumer(t.Context(), e.store.StreamName(aggregate.Context), projection.DefaultDurable))
	p2 := e.projector(t)
	run(t, p2)
	handled(t, p2, 1)
	e.drained(t)
	fresh := e.index(t)
	run(t, fresh)
	<-fresh.Ready()
	require.Eventually(t, func() bool { return ix.Len() == fresh.Len() && ix.Len() == 10 }, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, answers(t, fresh), answers(t, ix), "the index equals a fresh load of the new bucket")
}
