package processor

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// The key table keeps one call at a time per function and aggregate
// across the processor's consumers. A function's live calls of an
// aggregate are one at a time already: they are tasks of one lane of its
// live consumer, under one key (tasks.go), as are a release's and a range
// replay's (calltask.go). A replay's call is a task of the replay
// consumer's lane of its record, another goroutine. So every call takes
// its key in the table for as long as it runs; a call that finds the key
// taken is parked, off its lane, and resumed on its lane, holding the
// key, when the call before it is done. Uncontended, that is a lock and a
// map write before the call and after it; only a contended key costs a
// hop between lanes.

// callKey is a function on an aggregate: its subject in the event store.
type callKey struct {
	f       *function
	subject string
}

// keyShards spreads the table's lock over the lanes.
const keyShards = 32

// keyTable is the keys taken, each with the parked calls that wait for
// it in arrival order; W is how a waiter is woken (laneWaiter), a value
// kept only while it waits, so that an uncontended key allocates nothing.
// Safe for concurrent use.
type keyTable[W waker] struct {
	shards [keyShards]keyShard[W]
}

// waker wakes a parked call, which then holds the key: false when it can
// no longer take it (its lane stopped).
type waker interface{ wake() bool }

type keyShard[W waker] struct {
	mu    sync.Mutex
	taken map[callKey][]W // the waiters
}

// keySeed seeds the hash that picks a key's shard.
var keySeed = maphash.MakeSeed()

func (kt *keyTable[W]) shard(k callKey) *keyShard[W] {
	return &kt.shards[maphash.String(keySeed, k.subject)%keyShards]
}

// acquire takes k and returns true, or, when another call holds it,
// queues w and returns false: release then hands k over to the first
// waiter whose wake takes it.
func (kt *keyTable[W]) acquire(k callKey, w W) bool {
	s := kt.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if waiters, ok := s.taken[k]; ok {
		s.taken[k] = append(waiters, w)
		return false
	}
	if s.taken == nil {
		s.taken = make(map[callKey][]W)
	}
	s.taken[k] = nil
	return true
}

// release gives k up: to the first waiter whose wake takes it, else to
// nobody.
func (kt *keyTable[W]) release(k callKey) {
	s := kt.shard(k)
	for {
		s.mu.Lock()
		waiters := s.taken[k]
		if len(waiters) == 0 {
			delete(s.taken, k)
			s.mu.Unlock()
			return
		}
		w := waiters[0]
		var zero W
		waiters[0] = zero
		s.taken[k] = waiters[1:]
		s.mu.Unlock()
		if w.wake() {
			return
		}
	}
}

// laneWaiter is a task of a lane parked for its key: its wake resumes
// it on its lane, holding the key.
type laneWaiter struct {
	ls      *laneState
	task    taskKey
	holding *bool
}

func (w laneWaiter) wake() bool {
	*w.holding = true // read on the lane after the resume the Post orders after this
	ls, task := w.ls, w.task
	return ls.lane.Post(func(ctx context.Context) { ls.resume(ctx, task) })
}

// exclusiveCall makes the next call of f on d for task t of ls (callOnLane)
// holding k in the key table. parked: another call holds k; t waits off
// its lane (step returns resumeLater, more) and is resumed holding k, so
// that its step calls exclusiveCall again with *holding set.
func (p *Processor) exclusiveCall(ctx context.Context, ls *laneState, t taskKey, k callKey, holding *bool, f *function, d *Delivery) (wait time.Duration, more, parked bool, err error) {
	if !*holding {
		if !p.keys.acquire(k, laneWaiter{ls: ls, task: t, holding: holding}) {
			return 0, false, true, nil
		}
		*holding = true
	}
	wait, more, err = p.callOnLane(ctx, ls, f, d)
	*holding = false
	p.keys.release(k)
	return wait, more, false, err
}
