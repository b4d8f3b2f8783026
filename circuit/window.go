package circuit

import (
	"sync"
	"sync/atomic"
	"time"
)

// slots is how many parts a window is counted in.
const slots = 10

// window counts one instance's calls of one function: the failures in a
// row, and the calls and failures of the last Window in slots of a tenth
// of it. Safe for concurrent use. A success, the usual call, touches only
// atomics; failures and the turn of a slot take the lock. The counts are
// as exact as a trip threshold needs: a call counted in the slot being
// turned may be lost.
type window struct {
	mu          sync.Mutex
	width       int64 // ms per slot
	consecutive atomic.Int64
	firstFail   int64 // ms of the first failure of the current streak; mu held
	slot        [slots]counts
}

// counts are one slot's: its start, its calls and failures, the time of
// its first failure.
type counts struct{ at, calls, failures, first atomic.Int64 }

func newWindow(p Policy) *window {
	return &window{width: max(p.Window.Milliseconds()/slots, 1)}
}

// success counts a call that succeeded at now.
func (w *window) success(now time.Time) {
	if w.consecutive.Load() != 0 {
		w.consecutive.Store(0)
	}
	w.at(now.UnixMilli()).calls.Add(1)
}

// failure counts a call that failed at now and returns the failures in a
// row, the calls and failures of the window, and when the failures began
// (the first of those in the window, or of the streak).
func (w *window) failure(now time.Time) (consecutive int, calls, failures int64, since int64) {
	ms := now.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.consecutive.Add(1)
	if c == 1 {
		w.firstFail = ms
	}
	s := w.at(ms)
	s.calls.Add(1)
	if s.failures.Add(1) == 1 {
		s.first.Store(ms)
	}
	since = w.firstFail
	for i := range w.slot {
		x := &w.slot[i]
		if x.at.Load() > ms-w.width*slots {
			calls += x.calls.Load()
			failures += x.failures.Load()
			if f := x.first.Load(); x.failures.Load() > 0 && f < since {
				since = f
			}
		}
	}
	return int(c), calls, failures, since
}

// reset forgets everything: the circuit closed, a new count begins.
func (w *window) reset() {
	w.mu.Lock()
	w.consecutive.Store(0)
	w.firstFail = 0
	for i := range w.slot {
		w.slot[i].at.Store(0)
		w.slot[i].calls.Store(0)
		w.slot[i].failures.Store(0)
		w.slot[i].first.Store(0)
	}
	w.mu.Unlock()
}

// at returns the slot of ms, emptied if it held an older span.
func (w *window) at(ms int64) *counts {
	start := ms - ms%w.width
	s := &w.slot[(start/w.width)%slots]
	if s.at.Load() == start {
		return s
	}
	w.turn(s, start)
	return s
}

// turn empties s for the span beginning at start, unless another call did.
func (w *window) turn(s *counts, start int64) {
	if old := s.at.Load(); old != start && s.at.CompareAndSwap(old, start) {
		s.calls.Store(0)
		s.failures.Store(0)
		s.first.Store(0)
	}
}

// trips reports whether counts cross p's thresholds, and by which rule.
func trips(p Policy, consecutive int, calls, failures int64) (Cause, bool) {
	if consecutive >= p.ConsecutiveFailures {
		return CauseConsecutive, true
	}
	if calls >= int64(p.MinCalls) && float64(failures) >= p.FailureRatio*float64(calls) {
		return CauseRatio, true
	}
	return "", false
}
