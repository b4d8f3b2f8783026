package processor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A key is held by one call at a time: the others wait in arrival order
// and each is handed the key by the release before it; a waiter whose
// lane stopped is passed over.
func TestTheKeyTableHandsAKeyOverInOrder(t *testing.T) {
	var kt keyTable[testWaiter]
	f := &function{}
	k, other := callKey{f: f, subject: "s.o-1"}, callKey{f: f, subject: "s.o-2"}
	require.True(t, kt.acquire(k, testWaiter{}))
	require.True(t, kt.acquire(other, testWaiter{}), "another aggregate's key is free")
	otherFunction := callKey{f: &function{}, subject: "s.o-1"}
	require.True(t, kt.acquire(otherFunction, testWaiter{}), "another function's key is free")

	var woken []string
	wake := func(name string, takes bool) testWaiter {
		return testWaiter{fn: func() bool { woken = append(woken, name); return takes }}
	}
	require.False(t, kt.acquire(k, wake("gone", false)))
	require.False(t, kt.acquire(k, wake("a", true)))
	require.False(t, kt.acquire(k, wake("b", true)))
	kt.release(k)
	assert.Equal(t, []string{"gone", "a"}, woken, "the first waiter that can take it, past one whose lane stopped")
	require.False(t, kt.acquire(k, wake("c", true)), "a holds it now")
	kt.release(k)
	assert.Equal(t, []string{"gone", "a", "b"}, woken)
	kt.release(k)
	assert.Equal(t, []string{"gone", "a", "b", "c"}, woken)
	kt.release(k)
	assert.True(t, kt.acquire(k, testWaiter{}), "free once the last waiter released it")
	kt.release(k)
	kt.release(other)
	kt.release(otherFunction)
	for i := range kt.shards {
		assert.Empty(t, kt.shards[i].taken, "nothing left in shard %d", i)
	}
}

// Under contention from many goroutines, no two holders of one key ever
// overlap, and every acquirer gets the key once.
func TestTheKeyTableNeverHasTwoHolders(t *testing.T) {
	var kt keyTable[testWaiter]
	k := callKey{f: &function{}, subject: "s.o-1"}
	var holders, most, held atomic.Int32
	hold := func() {
		n := holders.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		for range 10 {
			runtime.Gosched() // let the others try while it holds the key
		}
		held.Add(1)
		holders.Add(-1)
		kt.release(k)
	}
	const callers = 200
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			woken := make(chan struct{})
			if !kt.acquire(k, testWaiter{fn: func() bool { close(woken); return true }}) {
				<-woken
			}
			hold()
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, most.Load(), "one holder at a time")
	assert.EqualValues(t, callers, held.Load(), "each caller held it once")
}

// testWaiter wakes by fn.
type testWaiter struct{ fn func() bool }

func (w testWaiter) wake() bool { return w.fn() }
