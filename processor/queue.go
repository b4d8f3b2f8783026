package processor

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// queue is a lane's unbounded FIFO of messages. The consumer's
// MaxAckPending bounds what all queues hold together, so the reader never
// blocks on one busy lane while the others starve, and drains each fetched
// batch as fast as it arrives.
type queue struct {
	mu     sync.Mutex
	items  []jetstream.Msg
	head   int
	closed bool
	signal chan struct{} // capacity 1: "something changed"
}

func newQueue() *queue { return &queue{signal: make(chan struct{}, 1)} }

func (q *queue) push(m jetstream.Msg) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	q.wake()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *queue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop returns the next message, waiting for one; false once the queue is
// closed and empty.
func (q *queue) pop() (jetstream.Msg, bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			m := q.items[q.head]
			q.items[q.head] = nil
			q.head++
			if q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
			}
			q.mu.Unlock()
			return m, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		<-q.signal
	}
}
