package kvwatch_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/natstest"
)

// Keys written while the watch starts are all read: the watch's own
// end-of-initial-values signal comes early then (this test fails if
// Initial stops at it).
func TestInitialReadsKeysUpdatedMeanwhile(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	for i := range 20 {
		_, err := kv.Put(t.Context(), fmt.Sprintf("k%d", i), []byte("0"))
		require.NoError(t, err)
		if i < 15 {
			require.NoError(t, kv.Delete(t.Context(), fmt.Sprintf("k%d", i)))
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := 15; i < 20; i++ {
		wg.Go(func() {
			for n := 1; ctx.Err() == nil; n++ {
				_, _ = kv.Put(ctx, fmt.Sprintf("k%d", i), fmt.Appendf(nil, "%d", n))
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	for i := range 30 {
		all := i%2 == 1 // InitialAll, from the stream's info
		w, err := kv.WatchAll(t.Context(), jetstream.IncludeHistory())
		require.NoError(t, err)
		live := map[string]bool{}
		read := func(e jetstream.KeyValueEntry) { live[e.Key()] = e.Operation() == jetstream.KeyValuePut }
		if all {
			require.NoError(t, kvwatch.InitialAll(t.Context(), kv, w, read))
		} else {
			require.NoError(t, kvwatch.Initial(t.Context(), js, kv, ">", w, read))
		}
		require.NoError(t, w.Stop())
		n := 0
		for k, ok := range live {
			if ok {
				n++
				require.Contains(t, []string{"k15", "k16", "k17", "k18", "k19"}, k)
			}
		}
		require.Equal(t, 5, n, "live keys read: %v", live)
	}
}

func TestInitialOfAnEmptyBucketReturns(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	w, err := kv.WatchAll(t.Context(), jetstream.IncludeHistory())
	require.NoError(t, err)
	defer func() { _ = w.Stop() }()
	calls := 0
	require.NoError(t, kvwatch.Initial(t.Context(), js, kv, ">", w, func(jetstream.KeyValueEntry) { calls++ }))
	require.Zero(t, calls)
	_, err = kv.Put(t.Context(), "later", []byte("1"))
	require.NoError(t, err)
	e := <-w.Updates()
	if e == nil {
		e = <-w.Updates() // the watch's own end-of-initial-values signal
	}
	require.NotNil(t, e, "later entries stay in the watch")
	require.Equal(t, "later", e.Key())
}

func TestInitialEndsWithItsContext(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	_, err = kv.Put(t.Context(), "k", []byte("1"))
	require.NoError(t, err)
	w, err := kv.WatchAll(t.Context(), jetstream.IncludeHistory())
	require.NoError(t, err)
	defer func() { _ = w.Stop() }()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = kvwatch.Initial(ctx, js, kv, ">", w, func(jetstream.KeyValueEntry) {})
	require.ErrorIs(t, err, context.Canceled)
}

func TestKeysListsEveryLiveKeyWhileKeysAreWritten(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	for i := range 10 {
		_, err := kv.Put(t.Context(), fmt.Sprintf("k%d", i), []byte("0"))
		require.NoError(t, err)
	}
	require.NoError(t, kv.Delete(t.Context(), "k0"))
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := 5; i < 10; i++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = kv.Put(ctx, fmt.Sprintf("k%d", i), []byte("1"))
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	for range 20 {
		keys, err := kvwatch.Keys(t.Context(), js, kv, ">")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}, keys)
	}
	empty, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch_empty"})
	require.NoError(t, err)
	keys, err := kvwatch.Keys(t.Context(), js, empty, ">")
	require.NoError(t, err)
	require.Empty(t, keys)
}

// A watch resumed after a revision delivers the changes since, deletions
// included, and returns at once when there is none (this test hangs on
// an Initial that counts from 0).
func TestInitialAllAfterReadsTheChangesSince(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c"} {
		_, err := kv.Put(t.Context(), k, []byte("1"))
		require.NoError(t, err)
	}
	after, err := kv.Put(t.Context(), "d", []byte("1"))
	require.NoError(t, err)

	read := func(after uint64) []string {
		w, err := kv.WatchAll(t.Context(), jetstream.IncludeHistory(), jetstream.ResumeFromRevision(after+1))
		require.NoError(t, err)
		defer func() { _ = w.Stop() }()
		var got []string
		require.NoError(t, kvwatch.InitialAllAfter(t.Context(), kv, w, after, func(e jetstream.KeyValueEntry) {
			got = append(got, fmt.Sprintf("%s %s", e.Operation(), e.Key()))
		}))
		return got
	}
	require.Empty(t, read(after), "nothing since")
	require.NoError(t, kv.Delete(t.Context(), "a"))
	_, err = kv.Put(t.Context(), "e", []byte("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"KeyValueDeleteOp a", "KeyValuePutOp e"}, read(after))
}

func TestRangeReadsTheKeysLastWrittenBetweenTwoRevisions(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	put := func(k string) uint64 {
		rev, err := kv.Put(t.Context(), k, []byte("1"))
		require.NoError(t, err)
		return rev
	}
	put("a")                                        // 1
	put("b")                                        // 2
	put("c")                                        // 3
	put("a")                                        // 4: a's revision 1 is gone
	require.NoError(t, kv.Delete(t.Context(), "b")) // 5
	put("d")                                        // 6

	read := func(from, to uint64, limit int) []string {
		var got []string
		n, err := kvwatch.Range(t.Context(), kv, from, to, limit, func(e jetstream.KeyValueEntry) {
			got = append(got, fmt.Sprintf("%d %s %s", e.Revision(), e.Operation(), e.Key()))
		})
		require.NoError(t, err)
		require.Len(t, got, n)
		return got
	}
	require.Equal(t, []string{"3 KeyValuePutOp c", "4 KeyValuePutOp a", "5 KeyValueDeleteOp b"}, read(1, 5, 10))
	require.Equal(t, []string{"3 KeyValuePutOp c"}, read(1, 5, 1), "at most limit")
	require.Empty(t, read(1, 2, 10), "both rewritten since")
	require.Equal(t, []string{"6 KeyValuePutOp d"}, read(6, 100, 10), "up to the end")
	require.Empty(t, read(7, 100, 10), "after the end")
	require.Empty(t, read(5, 4, 10), "an empty range")
}

// Follow passes the entries in order, without the end-of-initial-values
// nil, returns nil when its context ends and ErrEnded when the watch
// closes.
func TestFollowPassesEntriesUntilTheEnd(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	for i := range 3 {
		_, err := kv.Put(t.Context(), fmt.Sprint("k", i), []byte("1"))
		require.NoError(t, err)
	}
	w, err := kv.WatchAll(t.Context())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var keys []string
	require.NoError(t, kvwatch.Follow(ctx, w, func(e jetstream.KeyValueEntry) {
		keys = append(keys, e.Key())
		if len(keys) == 3 {
			cancel()
		}
	}), "the end of its context is a normal end")
	require.Equal(t, []string{"k0", "k1", "k2"}, keys)

	require.NoError(t, w.Stop())
	err = kvwatch.Follow(t.Context(), w, func(jetstream.KeyValueEntry) { t.Error("no entry after the stop") })
	require.ErrorIs(t, err, kvwatch.ErrEnded)
}

// A watch of some keys' patterns reads every one of their keys, deletions
// included, while other keys are written, and none of the other keys;
// Last reads the last change of a pattern's keys.
func TestInitialFilteredReadsEveryKeyOfItsPatternsAndNoOther(t *testing.T) {
	js := natstest.New(t).JetStream()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "kvwatch"})
	require.NoError(t, err)
	for i := range 40 {
		for _, p := range []string{"a", "b", "c"} {
			_, err := kv.Put(t.Context(), fmt.Sprintf("%s.%d", p, i), []byte("0"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, kv.Delete(t.Context(), "a.3"))
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; ctx.Err() == nil; n++ {
			_, _ = kv.Put(ctx, fmt.Sprintf("c.%d", n%40), fmt.Appendf(nil, "%d", n)) // written after every key it reads
		}
	})
	defer func() { cancel(); wg.Wait() }()
	patterns := []string{"a.>", "b.*"}
	for range 10 {
		w, err := kv.WatchFiltered(t.Context(), []string{"a.>", "b.*"}, jetstream.IncludeHistory())
		require.NoError(t, err)
		live := map[string]bool{}
		require.NoError(t, kvwatch.InitialFilteredAfter(t.Context(), js, kv, patterns, w, 0, func(e jetstream.KeyValueEntry) {
			require.NotEqual(t, "c", e.Key()[:1], "a key of no pattern: %s", e.Key())
			live[e.Key()] = e.Operation() == jetstream.KeyValuePut
		}))
		require.NoError(t, w.Stop())
		require.Len(t, live, 80, "every key of the patterns")
		require.False(t, live["a.3"], "the deletion read")
	}
	e, err := kvwatch.Last(t.Context(), js, "kvwatch", "a.*")
	require.NoError(t, err)
	require.Equal(t, "a.3", e.Key(), "the last change of a's keys: the deletion of a.3")
	require.Equal(t, jetstream.KeyValueDelete, e.Operation())
	e, err = kvwatch.Last(t.Context(), js, "kvwatch", "*.39")
	require.NoError(t, err)
	require.Contains(t, []string{"b.39", "c.39"}, e.Key(), "b.39 was written after a.39; c.39 may be written since")
	_, err = kvwatch.Last(t.Context(), js, "kvwatch", "d.*")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
}
