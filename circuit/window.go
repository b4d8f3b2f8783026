package circuit

import (
	"cmp"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// slots is how many parts a window is counted in.
const slots = 10

// maxFailed bounds the distinct failed events a window remembers; past it
// the oldest is forgotten first (at 100 failing events a second, a 30 s
// window holds 3 000).
const maxFailed = 8192

// confidenceZ is how sure the ratio rule must be: it opens only when the
// lower end of the Wilson score interval of the failure share, at z = 4
// (one-sided, about 3 in 100 000), is above the policy's FailureRatio. A
// share of events that always fail for their own reason, at most
// FailureRatio, then opens it about never, however few events the window
// holds; a dead dependency (every distinct event failing) opens it after
// 19 of 20, or 17 in a row on a window that held nothing else.
const confidenceZ = 4.0

// window counts one instance's observations of one function: distinct
// events, not calls (see the package documentation, "Evidence"). Safe for
// concurrent use. A success, the usual call, touches only atomics;
// failures and the turn of a slot take the lock. The counts are as exact
// as a trip threshold needs: a call counted in the slot being turned may
// be lost.
type window struct {
	mu     sync.Mutex
	width  int64 // ms per slot
	span   int64 // ms of the window
	perAgg int   // the failures one aggregate may add to a streak
	seed   maphash.Seed
	// consecutive counts the distinct events that failed since the last
	// success, each aggregate at most perAgg times (streak, mu held; a
	// success bumps gen, and the next failure starts a new streak).
	consecutive atomic.Int64
	gen         atomic.Int64
	streakGen   int64
	streak      map[uint64]int
	firstFail   int64 // ms of the first failure of the current streak; mu held
	slot        [slots]counts
	// failed holds the distinct events that failed in the window (mu
	// held), oldest first in queue; byAgg how many failures each aggregate
	// added to the window's counts (at most perAgg).
	failed map[uint64]uint8
	queue  []failedEvent
	head   int
	byAgg  map[uint64]int
}

// failedEvent is a part of a distinct event's failure: when, its
// aggregate, whether it holds the event's key in failed (its first part)
// and whether it was counted in the window (its aggregate was below its
// share).
type failedEvent struct {
	at         int64
	event, agg uint64
	keyed      bool
	counted    bool
}

// counts are one slot's: its start, its calls and failures, the time of
// its first failure.
type counts struct{ at, calls, failures, first atomic.Int64 }

func newWindow(p Policy) *window {
	return &window{
		width: max(p.Window.Milliseconds()/slots, 1), span: max(p.Window.Milliseconds(), slots),
		perAgg: perAggregate(p), seed: maphash.MakeSeed(),
		failed: map[uint64]uint8{}, streak: map[uint64]int{}, byAgg: map[uint64]int{},
	}
}

// perAggregate is how many failures of one aggregate a streak, and a
// window, count: a quarter of ConsecutiveFailures, at least 2, so that a
// streak needs the events of at least four aggregates (a few bad
// aggregates never open the circuit by themselves).
func perAggregate(p Policy) int { return max(2, p.ConsecutiveFailures/4) }

// success counts a call that succeeded at now.
func (w *window) success(now time.Time) {
	if w.consecutive.Load() != 0 {
		w.consecutive.Store(0)
		w.gen.Add(1)
	}
	w.at(now.UnixMilli()).calls.Add(1)
}

// The parts of an observation a failed event has added (window.failed):
// to the streak, and to the window's counts.
const (
	inStreak uint8 = 1 << iota
	inRatio
)

// failure counts the failure at now of call c and returns whether it
// counted, the distinct events failed in a row, the calls and failures of
// the window, and when the failures began (the first of those in the
// window, or of the streak). An execution is one observation: a failure
// with immediate retries to come (pending) adds its event to the streak
// only, so that a dead dependency opens the circuit on first calls; its
// final failure adds it to the window's counts, which decide the ratio
// rule; an event already counted so in the window adds nothing more. An
// aggregate past its share in the streak, or in the window, adds nothing
// to that count.
func (w *window) failure(now time.Time, c Call, pending bool) (counted bool, consecutive int, calls, failures int64, since int64) {
	ms := now.UnixMilli()
	ev, agg := w.hash(c.Event), w.hash(c.Aggregate)
	keyed := c.Event != ""
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expire(ms)
	var had uint8
	if keyed {
		had = w.failed[ev]
	}
	streak := had&inStreak == 0
	ratio := !pending && had&inRatio == 0
	if !streak && !ratio {
		return false, 0, 0, 0, 0
	}
	inWindow := ratio && (c.Aggregate == "" || w.byAgg[agg] < w.perAgg)
	w.remember(failedEvent{at: ms, event: ev, agg: agg, keyed: keyed && had == 0, counted: inWindow && c.Aggregate != ""})
	if keyed {
		w.failed[ev] = had | inStreak
		if ratio {
			w.failed[ev] |= inRatio
		}
	}
	cons := w.consecutive.Load()
	if streak {
		cons = w.addToStreak(ms, c.Aggregate, agg)
	}
	if inWindow {
		s := w.at(ms)
		s.calls.Add(1)
		if s.failures.Add(1) == 1 {
			s.first.Store(ms)
		}
	}
	calls, failures, since = w.totals(ms)
	return true, int(cons), calls, failures, since
}

// addToStreak adds a failed event of aggregate (agg its hash) at ms to
// the streak, unless its aggregate has added its share, and returns the
// streak's length. Called with w.mu held.
func (w *window) addToStreak(ms int64, aggregate string, agg uint64) int64 {
	if g := w.gen.Load(); g != w.streakGen {
		w.streakGen = g
		clear(w.streak)
	}
	if aggregate != "" && w.streak[agg] >= w.perAgg {
		return w.consecutive.Load()
	}
	if aggregate != "" {
		w.streak[agg]++
	}
	cons := w.consecutive.Add(1)
	if cons == 1 {
		w.firstFail = ms
	}
	return cons
}

// totals adds up the window's calls and failures at ms, and the time of
// its first failure (of the streak's, or the window's, whichever is
// older; ms when there is none). Called with w.mu held.
func (w *window) totals(ms int64) (calls, failures, since int64) {
	since = cmp.Or(w.firstFail, ms)
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
	return calls, failures, since
}

func (w *window) hash(s string) uint64 {
	if s == "" {
		return 0
	}
	return maphash.String(w.seed, s)
}

// remember keeps e; w.mu held.
func (w *window) remember(e failedEvent) {
	if len(w.queue)-w.head >= maxFailed {
		w.forget()
	}
	if e.counted {
		w.byAgg[e.agg]++
	}
	w.queue = append(w.queue, e)
}

// expire forgets the failures older than the window; w.mu held.
func (w *window) expire(ms int64) {
	for w.head < len(w.queue) && w.queue[w.head].at <= ms-w.span {
		w.forget()
	}
	if w.head > 0 && w.head >= len(w.queue)/2 {
		w.queue = append(w.queue[:0], w.queue[w.head:]...)
		w.head = 0
	}
}

// forget drops the oldest failure; w.mu held.
func (w *window) forget() {
	e := w.queue[w.head]
	w.head++
	if e.keyed {
		delete(w.failed, e.event)
	}
	if e.counted {
		if w.byAgg[e.agg]--; w.byAgg[e.agg] <= 0 {
			delete(w.byAgg, e.agg)
		}
	}
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
	clear(w.failed)
	clear(w.streak)
	clear(w.byAgg)
	w.queue, w.head = w.queue[:0], 0
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

// trips reports whether counts cross p's thresholds, and by which rule:
// ConsecutiveFailures distinct events in a row, or at least MinCalls in
// the window with a failure share above FailureRatio at confidenceZ.
func trips(p Policy, consecutive int, calls, failures int64) (Cause, bool) {
	if consecutive >= p.ConsecutiveFailures {
		return CauseConsecutive, true
	}
	if calls >= int64(p.MinCalls) && wilsonLower(failures, calls, confidenceZ) > p.FailureRatio {
		return CauseRatio, true
	}
	return "", false
}

// wilsonLower is the lower end of the Wilson score interval of k
// successes in n trials at z.
func wilsonLower(k, n int64, z float64) float64 {
	if n <= 0 {
		return 0
	}
	nf := float64(n)
	phat := float64(k) / nf
	z2 := z * z
	centre := phat + z2/(2*nf)
	margin := z * math.Sqrt(phat*(1-phat)/nf+z2/(4*nf*nf))
	return (centre - margin) / (1 + z2/nf)
}
