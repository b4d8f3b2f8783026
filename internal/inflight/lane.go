package inflight

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Lane is one of a runtime's lanes: it runs its handler on its messages,
// one batch at a time, and the work posted to it, in arrival order. Safe
// for concurrent use.
type Lane struct {
	index   int
	mu      sync.Mutex
	items   []item
	head    int
	closed  bool
	signal  chan struct{} // capacity 1: "something changed"
	stopped chan struct{} // closed once nothing runs on the lane any more
}

// item is a message or posted work.
type item struct {
	m  *Msg
	fn func(context.Context)
}

func newLane(i int) *Lane {
	return &Lane{index: i, signal: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// Index returns the lane's number, from 0 to Config.Lanes-1: a handler
// keeps its per-lane state by it.
func (l *Lane) Index() int { return l.index }

// Post queues fn to run on the lane after what is queued already, with the
// handlers' context. It returns false, and fn never runs, once the lane
// has stopped; work posted while it stops is dropped too.
func (l *Lane) Post(fn func(ctx context.Context)) bool { return l.push(item{fn: fn}) }

// Stopped is closed once the lane's goroutine has returned: nothing posted
// to it runs any more, and what did not run never will. Work that waits
// for something it posted selects on it too. A lane of NewLane never
// stops.
func (l *Lane) Stopped() <-chan struct{} { return l.stopped }

func (l *Lane) push(it item) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.items = append(l.items, it)
	l.mu.Unlock()
	l.wake()
	return true
}

func (l *Lane) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wake()
}

func (l *Lane) wake() {
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// pop waits for the next item and returns either posted work, or up to
// size messages queued one after another (appended to batch); ok is false
// once the lane is closed and empty.
func (l *Lane) pop(batch []jetstream.Msg, size int) (_ []jetstream.Msg, fn func(context.Context), ok bool) {
	for {
		l.mu.Lock()
		if l.head < len(l.items) {
			if it := l.items[l.head]; it.fn != nil {
				l.take(1)
				l.mu.Unlock()
				return batch, it.fn, true
			}
			n := 0
			for l.head+n < len(l.items) && n < size && l.items[l.head+n].m != nil {
				batch = append(batch, l.items[l.head+n].m)
				n++
			}
			l.take(n)
			l.mu.Unlock()
			return batch, nil, true
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return batch, nil, false
		}
		<-l.signal
	}
}

// take drops the n items at the head; l.mu held.
func (l *Lane) take(n int) {
	clear(l.items[l.head : l.head+n])
	l.head += n
	if l.head == len(l.items) {
		l.items, l.head = l.items[:0], 0
	}
}

// NewLane returns a lane of no Runtime, for handlers called without one
// (tests, fuzzers): RunPosted runs what is posted to it.
func NewLane() *Lane { return newLane(0) }

// RunPosted runs, in order, the work posted to l so far and what that
// work posts, until none is left, and returns how much ran. For lanes of
// NewLane; messages on l are left where they are.
func (l *Lane) RunPosted(ctx context.Context) int {
	n := 0
	for {
		l.mu.Lock()
		var fn func(context.Context)
		for i := l.head; i < len(l.items); i++ {
			if l.items[i].fn != nil {
				fn = l.items[i].fn
				l.items = append(l.items[:i], l.items[i+1:]...)
				break
			}
		}
		l.mu.Unlock()
		if fn == nil {
			return n
		}
		fn(ctx)
		n++
	}
}
