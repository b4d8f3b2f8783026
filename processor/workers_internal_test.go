package processor

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/testwait"
)

// At most the limit run at once; Go does not block while they do; Wait
// waits for all; the goroutines return once the queue is empty.
func TestWorkersRunAtMostTheLimit(t *testing.T) {
	const limit, n = 3, 20
	w := newWorkers(limit)
	release := make(chan struct{})
	var running, most, ran atomic.Int32
	for i := range n {
		w.Go(func() { // never blocks, though the first three block
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			if i < limit {
				<-release
			}
			ran.Add(1)
			running.Add(-1)
		})
	}
	testwait.For(t, "the first three run", func() bool { return running.Load() == limit })
	assert.Zero(t, ran.Load(), "the rest wait for a goroutine")
	close(release)
	w.Wait()
	assert.EqualValues(t, n, ran.Load())
	assert.EqualValues(t, limit, most.Load(), "never more than the limit at once")
	testwait.For(t, "the goroutines returned", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.live == 0 && w.queue == nil
	})
	w.Go(func() { ran.Add(1) }) // a drained w takes work again
	w.Wait()
	assert.EqualValues(t, n+1, ran.Load())
}

// The queued functions run in the order they were handed over.
func TestWorkersRunTheQueueInOrder(t *testing.T) {
	w := newWorkers(1)
	release := make(chan struct{})
	var order []int // one goroutine at a time appends
	w.Go(func() { <-release })
	for i := range 10 {
		w.Go(func() { order = append(order, i) })
	}
	close(release)
	w.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, order)
}

// A limit below one runs one at a time rather than none.
func TestWorkersRunOneAtLeast(t *testing.T) {
	w := newWorkers(0)
	var ran atomic.Int32
	for range 5 {
		w.Go(func() { ran.Add(1) })
	}
	w.Wait()
	assert.EqualValues(t, 5, ran.Load())
}
