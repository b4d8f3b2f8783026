package processor

import "sync"

// workers runs a runner's recordings (laneState.background) on at most
// limit goroutines, in the order they were handed over; the rest wait in
// a queue. A goroutine takes the next recording from the queue when it
// is done with one and returns once the queue is empty.
//
// Unbounded, a backlog of failures (every event of a busy function
// failing, several functions an event) starts a goroutine per recording:
// MaxAckPending times the functions, thousands, each growing its stack
// through the recording's deep call path. Bounded, the same backlog is
// recorded faster (benchmarks in the processor's bench_test.go) by
// goroutines whose stacks have grown already.
//
// Go never blocks. Wait returns once every function handed to Go has
// returned. Both are safe for concurrent use.
type workers struct {
	limit   int
	running sync.WaitGroup // functions handed to Go that have not returned

	mu    sync.Mutex
	queue []func() // waiting for a goroutine
	live  int      // goroutines
}

// recordingsPerLane is how many recordings per lane run at once, with a
// floor of minRecordings: a recording is a round trip to the store, so a
// few per lane keep the lane's tasks moving while the store answers.
const (
	recordingsPerLane = 4
	minRecordings     = 64
)

func newWorkers(limit int) *workers { return &workers{limit: max(limit, 1)} }

// Go runs fn on a goroutine of w: a new one while fewer than the limit
// run, else the first of them to be free.
func (w *workers) Go(fn func()) {
	w.running.Add(1)
	w.mu.Lock()
	if w.live < w.limit {
		w.live++
		w.mu.Unlock()
		go w.work(fn)
		return
	}
	w.queue = append(w.queue, fn)
	w.mu.Unlock()
}

// work runs fn, then what the queue holds, until it is empty.
func (w *workers) work(fn func()) {
	for fn != nil {
		fn()
		w.running.Done()
		fn = w.next()
	}
}

// next takes the queue's first function; nil, and one goroutine fewer,
// if it is empty.
func (w *workers) next() func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.live--
		w.queue = nil // let a drained backlog's array go
		return nil
	}
	fn := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	return fn
}

// Wait returns once every function handed to Go has returned.
func (w *workers) Wait() { w.running.Wait() }
