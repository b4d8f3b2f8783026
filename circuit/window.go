package circuit

import (
	"sync"
	"time"
)

// slots is how many parts a window is counted in.
const slots = 10

// window counts one instance's calls of one function: the failures in a
// row, and the calls and failures of the last Window in slots of a tenth
// of it. Safe for concurrent use.
type window struct {
	mu          sync.Mutex
	width       int64 // ms per slot
	consecutive int
	firstFail   int64 // ms of the first failure of the current streak of failures
	slot        [slots]counts
}

func newWindow(p Policy) *window {
	return &window{width: max(p.Window.Milliseconds()/slots, 1)}
}

// success counts a call that succeeded at now.
func (w *window) success(now time.Time) {
	w.mu.Lock()
	w.consecutive = 0
	w.at(now.UnixMilli()).calls++
	w.mu.Unlock()
}

// failure counts a call that failed at now and returns the failures in a
// row, the calls and failures of the window, and when the failures began
// (the first of those in the window, or of the streak).
func (w *window) failure(now time.Time) (consecutive int, calls, failures int64, since int64) {
	ms := now.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.consecutive == 0 {
		w.firstFail = ms
	}
	w.consecutive++
	s := w.at(ms)
	s.calls++
	if s.failures == 0 {
		s.first = ms
	}
	s.failures++
	since = w.firstFail
	for i := range w.slot {
		x := &w.slot[i]
		if x.at > ms-w.width*slots {
			calls += x.calls
			failures += x.failures
			if x.failures > 0 && x.first < since {
				since = x.first
			}
		}
	}
	return w.consecutive, calls, failures, since
}

// reset forgets everything: the circuit closed, a new count begins.
func (w *window) reset() {
	w.mu.Lock()
	w.consecutive, w.firstFail = 0, 0
	w.slot = [slots]counts{}
	w.mu.Unlock()
}

// counts are one slot's: its start, its calls and failures, the time of
// its first failure.
type counts struct{ at, calls, failures, first int64 }

// at returns the slot of ms, emptied if it held an older span.
func (w *window) at(ms int64) *counts {
	start := ms - ms%w.width
	s := &w.slot[(start/w.width)%slots]
	if s.at != start {
		*s = counts{at: start}
	}
	return s
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
