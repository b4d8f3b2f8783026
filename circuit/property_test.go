package circuit_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/fakeclock"
)

// Whatever the dependency does, a breaker never lets a call through while
// its circuit is not closed, except as the probe, and never two probes at
// once; and once the dependency is up for good, the circuit closes after
// at most the longest cool-down and the policy's successes.
func TestPropertyNoCallWhileOpenAndAlwaysCloses(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := circuit.Policy{
			ConsecutiveFailures: rapid.IntRange(1, 30).Draw(rt, "consecutive"),
			MinCalls:            rapid.IntRange(1, 40).Draw(rt, "minCalls"),
			FailureRatio:        rapid.Float64Range(0.1, 1).Draw(rt, "ratio"),
			Window:              time.Duration(rapid.IntRange(1, 60).Draw(rt, "windowS")) * time.Second,
			CoolDown:            time.Duration(rapid.IntRange(1, 20).Draw(rt, "coolDownS")) * time.Second,
			Successes:           rapid.IntRange(1, 5).Draw(rt, "successes"),
			ProbeTimeout:        time.Duration(rapid.IntRange(1, 30).Draw(rt, "probeTimeoutS")) * time.Second,
		}
		p.MaxCoolDown = p.CoolDown * time.Duration(rapid.IntRange(1, 8).Draw(rt, "maxFactor"))
		clock := fakeclock.At(t0.UnixMilli())
		set := circuit.NewSet(nil, mailer.Context, "i1", quiet(), clock)
		b, err := set.Breaker(mailer, p)
		if err != nil {
			rt.Fatalf("breaker: %v", err)
		}
		ctx := context.Background()
		up := rapid.Bool().Draw(rt, "up")
		var pendingUntil int64 // a probe let through that never answers (its instance died) is its until then
		call := func(done bool) {
			before := b.State()
			tk, refused := b.Allow(ctx, clock.Now(), circuit.Call{})
			if refused != nil {
				return
			}
			if before.Phase != circuit.Closed && !tk.Probe() {
				rt.Fatalf("a call went through while the circuit was %s and it was not the probe", before.Phase)
			}
			if tk.Probe() && clock.Now().UnixMilli() < pendingUntil {
				rt.Fatalf("a second probe while one is under way and not timed out")
			}
			if !done && tk.Probe() {
				pendingUntil = b.State().Probe.Until
				return
			}
			var o circuit.Outcome
			if !up {
				o = circuit.Outcome{Err: errDown, Counted: true}
			}
			b.Done(ctx, clock.Now(), tk, o)
		}
		steps := rapid.IntRange(0, 300).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0:
				up = !up
			case 1, 2:
				clock.Set(clock.Now().Add(time.Duration(rapid.IntRange(0, 15000).Draw(rt, "advanceMs")) * time.Millisecond))
			case 3:
				call(false)
			default:
				call(true)
			}
		}
		// The dependency recovers for good.
		up = true
		for i := 0; i < p.Successes+2 && !b.Passing(); i++ {
			clock.Set(clock.Now().Add(p.MaxCoolDown + p.ProbeTimeout))
			for range p.Successes {
				call(true)
			}
		}
		if !b.Passing() {
			rt.Fatalf("the circuit did not close after the dependency recovered: %+v", b.State())
		}
	})
}
