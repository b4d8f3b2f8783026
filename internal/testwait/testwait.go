// Package testwait is the one way a test waits for something to happen:
// it polls a condition until it holds or a deadline passes. The deadline
// is long enough for a busy two-core CI machine; a condition that holds
// returns at once, so a fast machine never waits for it.
package testwait

import (
	"testing"
	"time"
)

// Deadline is how long For waits.
const Deadline = 30 * time.Second

// Tick is how often a condition is polled.
const Tick = 5 * time.Millisecond

// For polls cond every Tick until it holds, and fails tb (FailNow) once
// Deadline has passed, naming what it waited for. It must be called from
// the test's goroutine.
func For(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Within(tb, Deadline, what, cond)
}

// Within is For with deadline d, for the waits a benchmark or a kill loop
// knows to be longer.
func Within(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	t := time.NewTicker(Tick)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %s for %s, in vain", d, what)
		}
		<-t.C
	}
}
