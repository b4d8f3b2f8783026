package circuit_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/fakeclock"
)

var errBadAddress = errors.New("550 bad address")

// bad reports whether event id is one of the share pct of events that
// always fail for their own reason, chosen by a hash of the id as the
// storm bench chooses them.
func bad(id string, pct int) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32()%100) < pct
}

// call makes one call of c at now: it fails with err (nil: success),
// counted as the classification of a plain error does. It returns
// whether the breaker let it through.
func call(b *circuit.Breaker, now time.Time, c circuit.Call, err error) bool {
	tk, refused := b.Allow(context.Background(), now, c)
	if refused != nil {
		return false
	}
	b.Done(context.Background(), now, tk, circuit.Outcome{Err: err, Counted: err != nil})
	return true
}

func live(i int) circuit.Call {
	return circuit.Call{Event: fmt.Sprintf("evt-%d", i), Aggregate: fmt.Sprintf("order-%d", i%97)}
}

// Given a healthy dependency, when a fixed share of events (30 % and
// 50 %, by a hash of the event id) always fail, 100 events a second for
// five minutes, each bad one called again by its immediate retries and by
// a replay a minute later, then the circuit never opens. Given the same
// stream, when the dependency dies, then it opens within 20 distinct
// events.
func TestBadEventsNeverOpenTheCircuitADeadDependencyDoes(t *testing.T) {
	for _, pct := range []int{30, 50} {
		t.Run(fmt.Sprintf("%d%%", pct), func(t *testing.T) {
			clock := fakeclock.At(t0.UnixMilli())
			b := instance(t, nil, "i1", clock, circuit.Policy{})
			var failed []circuit.Call
			n := 0
			for range 300 * 100 {
				c := live(n)
				n++
				if bad(c.Event, pct) {
					for range 4 { // the call and its immediate retries
						call(b, clock.Now(), c, errBadAddress)
					}
					failed = append(failed, c)
				} else {
					require.True(t, call(b, clock.Now(), c, nil), "a healthy event is called")
				}
				if n%6000 == 0 { // a scheduler pass replays the bad records, back to back
					for _, f := range failed {
						f.Known, f.Record = true, "rec-"+f.Event
						call(b, clock.Now(), f, errBadAddress)
					}
				}
				clock.Set(clock.Now().Add(10 * time.Millisecond))
			}
			require.True(t, b.Passing(), "bad events at %d%% opened the circuit: %+v", pct, b.State().Transitions)
			assert.Empty(t, b.State().Transitions)

			before := n
			for b.Passing() {
				c := live(n)
				n++
				call(b, clock.Now(), c, errDown)
				clock.Set(clock.Now().Add(10 * time.Millisecond))
				require.LessOrEqual(t, n-before, 20, "a dead dependency opens it within 20 distinct events")
			}
		})
	}
}

// One event failing again and again (its immediate retries, redeliveries,
// replays within the window) is one observation; so are the events of a
// few aggregates, past their share: neither opens the circuit.
func TestOneEventOrAFewAggregatesAreOneObservation(t *testing.T) {
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, nil, "i1", clock, circuit.Policy{})
	for range 500 {
		call(b, clock.Now(), circuit.Call{Event: "evt-1", Aggregate: "order-1"}, errDown)
	}
	assert.True(t, b.Passing(), "one event failing 500 times")
	for i := range 500 {
		call(b, clock.Now(), circuit.Call{Event: fmt.Sprintf("evt-x%d", i), Aggregate: fmt.Sprintf("order-%d", i%3)}, errDown)
	}
	assert.True(t, b.Passing(), "500 events of three aggregates")
	for i := range 17 {
		call(b, clock.Now(), live(1000+i), errDown)
	}
	assert.False(t, b.Passing(), "then the events of many aggregates fail: the dependency")
}

// A replay of a record that already failed for a real reason is evidence
// about the record: its failure is not counted, its success is; while the
// circuit is not closed it is refused, unless its record was chosen as the
// probe.
func TestKnownReplays(t *testing.T) {
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, nil, "i1", clock, circuit.Policy{})
	known := func(i int) circuit.Call {
		c := live(i)
		c.Known, c.Record = true, "rec-"+c.Event
		return c
	}
	for i := range 200 {
		require.True(t, call(b, clock.Now(), known(i), errDown))
	}
	require.True(t, b.Passing(), "200 failed replays of known-bad records")
	for i := range 20 {
		call(b, clock.Now(), live(500+i), errDown)
	}
	require.False(t, b.Passing(), "20 fresh events open it")
	clock.Set(clock.Now().Add(time.Minute))
	assert.False(t, call(b, clock.Now(), known(1), nil), "a known replay never claims the probe")
	require.True(t, call(b, clock.Now(), live(900), nil), "a live event does")
	assert.Equal(t, circuit.HalfOpen, b.State().Phase)
}

// Whatever mix of bad events (up to 40 %, a share that runs of twenty
// failures in a row make as rare as one in 10^8 events) and outages, the
// circuit opens only when the dependency failed within the window, or
// failed last before a streak no success has broken since (with sparse
// traffic an outage's failures and the bad events after it are one
// streak: no call has shown the dependency back), and once the dependency
// is up for good it closes, with no operator.
func TestPropertyOpensOnlyForTheDependencyAndAlwaysCloses(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pol := circuit.DefaultPolicy
		pct := rapid.IntRange(0, 40).Draw(rt, "badPct")
		aggs := rapid.IntRange(5, 200).Draw(rt, "aggregates")
		clock := fakeclock.At(t0.UnixMilli())
		set := circuit.NewSet(nil, mailer.Context, "i1", quiet(), clock)
		b, err := set.Breaker(mailer, pol)
		if err != nil {
			rt.Fatal(err)
		}
		up := true
		var lastDown time.Time // the last counted failure of the dependency itself
		var lastOK time.Time   // the last call that went through and succeeded
		var failed []circuit.Call
		n := 0
		ev := func() circuit.Call {
			n++
			return circuit.Call{Event: fmt.Sprintf("e%d", n), Aggregate: fmt.Sprintf("a%d", n%aggs)}
		}
		do := func(c circuit.Call) {
			var err error
			switch {
			case !up:
				err = errDown
			case bad(c.Event, pct):
				err = errBadAddress
			}
			before := b.State().Phase
			switch ok := call(b, clock.Now(), c, err); {
			case ok && err == errDown:
				lastDown = clock.Now()
			case ok && err == nil:
				lastOK = clock.Now()
			}
			if err == errBadAddress && !c.Known {
				failed = append(failed, c)
			}
			if before == circuit.Closed && b.State().Phase == circuit.Open && clock.Now().Sub(lastDown) > pol.Window && lastOK.After(lastDown) {
				rt.Fatalf("the circuit opened on bad events alone: the dependency was up for the whole window and a call succeeded since it last failed: %+v", b.State().Transitions)
			}
		}
		for range rapid.IntRange(0, 2000).Draw(rt, "steps") {
			switch rapid.IntRange(0, 19).Draw(rt, "action") {
			case 0:
				up = !up
			case 1, 2:
				clock.Set(clock.Now().Add(time.Duration(rapid.IntRange(0, 20000).Draw(rt, "advanceMs")) * time.Millisecond))
			case 3:
				if len(failed) > 0 {
					c := failed[rapid.IntRange(0, len(failed)-1).Draw(rt, "replay")]
					c.Known, c.Record = true, "rec-"+c.Event
					do(c)
				}
			default:
				do(ev())
			}
			clock.Set(clock.Now().Add(10 * time.Millisecond))
		}
		up = true
		for i := 0; i < 20000 && !b.Passing(); i++ {
			do(ev())
			clock.Set(clock.Now().Add(50 * time.Millisecond))
		}
		if !b.Passing() {
			rt.Fatalf("the circuit did not close after the dependency recovered: %+v", b.State())
		}
	})
}

// An execution is one observation. A failure with immediate retries to
// come is pending: it adds its event to the streak (so that a dead
// dependency opens the circuit on first calls, not after every retry)
// but not to the window's ratio; the execution's last call settles it.
// 30 % of events failing their first calls and then succeeding never
// open the circuit; every first call failing does, within 20 events.
func TestPendingFailures(t *testing.T) {
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, nil, "i1", clock, circuit.Policy{})
	pending := func(c circuit.Call) {
		tk, refused := b.Allow(context.Background(), clock.Now(), c)
		require.Nil(t, refused)
		b.Done(context.Background(), clock.Now(), tk, circuit.Outcome{Err: errDown, Counted: true, Pending: true})
	}
	var retries []circuit.Call // each succeeds 2 s after its first call
	var due []time.Time
	for i := range 6000 {
		c := live(i)
		if bad(c.Event, 30) {
			pending(c)
			retries, due = append(retries, c), append(due, clock.Now().Add(2*time.Second))
		} else {
			require.True(t, call(b, clock.Now(), c, nil))
		}
		for len(retries) > 0 && !clock.Now().Before(due[0]) {
			call(b, clock.Now(), retries[0], nil)
			retries, due = retries[1:], due[1:]
		}
		clock.Set(clock.Now().Add(10 * time.Millisecond))
	}
	require.True(t, b.Passing(), "transient failures opened the circuit: %+v", b.State().Transitions)

	for i := range 20 {
		pending(live(10000 + i))
	}
	require.False(t, b.Passing(), "20 distinct first calls failing, retries to come: a dead dependency")
	tr, _ := b.State().LastTransition()
	assert.Equal(t, circuit.CauseConsecutive, tr.Cause)

	// The ratio weighs ended executions only.
	clock.Set(clock.Now().Add(time.Hour))
	r := instance(t, nil, "i2", clock, circuit.Policy{ConsecutiveFailures: 1000})
	for i := range 200 {
		tk, _ := r.Allow(context.Background(), clock.Now(), live(20000+i))
		r.Done(context.Background(), clock.Now(), tk, circuit.Outcome{Err: errDown, Counted: true, Pending: true})
	}
	assert.True(t, r.Closed(), "200 pending failures are no ratio")
}
