package circuit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/rollout"
)

var drainPolicy = rollout.Adaptive{Canary: 1, Threshold: 0.5, Rate: 200, Retry: 10 * time.Second}

// settledNone says no record of a batch has an outcome.
func settledNone([]rollout.Record) (ok, failed []string) { return nil, nil }

func closedAfter(from, to time.Duration) circuit.State {
	s := circuit.New(mailer)
	s.Incident = circuit.Incident{From: at(from).UnixMilli(), To: at(to).UnixMilli()}
	return s
}

// Every rule of the incident's decider: given a circuit and its drain,
// when the scheduler looks at now, then the drain and what to do.
func TestDecideDrain(t *testing.T) {
	waiting := circuit.Drain{Function: mailer, From: at(-time.Second).UnixMilli(), Probes: 2, Progress: rollout.Progress{Phase: circuit.DrainWaiting}}
	running := circuit.Drain{Function: mailer, From: at(-time.Second).UnixMilli(), To: at(30 * time.Second).UnixMilli(),
		Progress: rollout.Start(drainPolicy, at(30*time.Second)).Launched([]rollout.Record{{ID: "a", Attempt: 1, Refused: true}, {ID: "b", Attempt: 1, Refused: true}}, at(31*time.Second))}
	done := circuit.Drain{Function: mailer, From: at(-time.Second).UnixMilli(), To: at(30 * time.Second).UnixMilli(), Probes: 3,
		Progress: rollout.Progress{Phase: circuit.DrainDone, Released: 5, Succeeded: 5}}
	cases := []struct {
		name    string
		circuit circuit.State
		drain   circuit.Drain
		stored  bool
		settled func([]rollout.Record) (ok, failed []string)
		change  circuit.DrainChange
		probe   bool
		roll    bool
		check   func(t *testing.T, d circuit.Drain)
	}{
		{name: "a closed circuit that never opened has nothing to drain", circuit: circuit.New(mailer)},
		{name: "the circuit opens: a new drain waits from the incident's start", circuit: open(), change: circuit.DrainHeld, probe: true,
			check: func(t *testing.T, d circuit.Drain) {
				assert.Equal(t, circuit.DrainWaiting, d.Phase)
				assert.Equal(t, at(-time.Second).UnixMilli(), d.From)
				assert.Contains(t, d.Note, "opened at")
			}},
		{name: "a finished drain waits again when the circuit opens again, keeping its probe count", circuit: open(), drain: done, stored: true,
			change: circuit.DrainHeld, probe: true,
			check: func(t *testing.T, d circuit.Drain) {
				assert.Equal(t, circuit.DrainWaiting, d.Phase)
				assert.Equal(t, 3, d.Probes)
				assert.Zero(t, d.Released, "a new incident counts afresh")
			}},
		{name: "a waiting drain probes while the circuit is open", circuit: open(), drain: waiting, stored: true, probe: true},
		{name: "an incident that began earlier widens the waiting window", circuit: func() circuit.State {
			s := open()
			s.Incident.From = at(-time.Minute).UnixMilli()
			return s
		}(), drain: waiting, stored: true, change: circuit.DrainWidened, probe: true,
			check: func(t *testing.T, d circuit.Drain) { assert.Equal(t, at(-time.Minute).UnixMilli(), d.From) }},
		{name: "the circuit opens again while draining: the step is given up, what settled counts", circuit: open(), drain: running, stored: true,
			settled: func([]rollout.Record) (ok, failed []string) { return []string{"a"}, nil }, change: circuit.DrainReopened, probe: true,
			check: func(t *testing.T, d circuit.Drain) {
				assert.Equal(t, circuit.DrainWaiting, d.Phase)
				assert.Empty(t, d.Batch)
				assert.Zero(t, d.To)
				assert.Equal(t, [2]int{1, 1}, [2]int{d.Released, d.Succeeded})
			}},
		{name: "the circuit closes: the drain starts at its canary over the incident, from the earlier start", circuit: closedAfter(0, 30*time.Second),
			drain: waiting, stored: true, change: circuit.DrainStarted, roll: true,
			check: func(t *testing.T, d circuit.Drain) {
				assert.Equal(t, circuit.DrainCanary, d.Phase)
				assert.Equal(t, [2]int64{at(-time.Second).UnixMilli(), at(30 * time.Second).UnixMilli()}, [2]int64{d.From, d.To})
				assert.Equal(t, 1, d.Size)
				assert.Equal(t, 2, d.Probes)
			}},
		{name: "a circuit closed with no drain stored (a replay's recovery) starts one", circuit: closedAfter(0, 30*time.Second),
			change: circuit.DrainStarted, roll: true},
		{name: "a drain under way rolls on", circuit: closedAfter(-time.Second, 30*time.Second), drain: running, stored: true, roll: true},
		{name: "a later incident reported while draining widens the window", circuit: closedAfter(-time.Second, time.Minute), drain: running, stored: true,
			change: circuit.DrainWidened, roll: true,
			check: func(t *testing.T, d circuit.Drain) {
				assert.Equal(t, at(time.Minute).UnixMilli(), d.To)
				assert.Len(t, d.Batch, 2, "the step under way goes on")
			}},
		{name: "a finished drain of the same incident stays finished", circuit: closedAfter(-time.Second, 30*time.Second), drain: done, stored: true},
		{name: "a later incident after a finished drain starts a new one", circuit: closedAfter(time.Minute, 2*time.Minute), drain: done, stored: true,
			change: circuit.DrainStarted, roll: true,
			check: func(t *testing.T, d circuit.Drain) {
				assert.Equal(t, at(time.Minute).UnixMilli(), d.From)
				assert.Zero(t, d.Released)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			settled := c.settled
			if settled == nil {
				settled = settledNone
			}
			now := at(40 * time.Second)
			d, dec := circuit.DecideDrain(c.circuit, c.drain, c.stored, now, drainPolicy, settled)
			assert.Equal(t, circuit.DrainDecision{Change: c.change, Probe: c.probe, Roll: c.roll}, dec)
			if c.change == circuit.DrainUnchanged {
				assert.Equal(t, c.drain, d, "nothing to store, nothing changed")
			} else {
				require.NoError(t, mustEncode(t, d), "what the decider stores validates")
			}
			if c.check != nil {
				c.check(t, d)
			}
			again, dec2 := circuit.DecideDrain(c.circuit, c.drain, c.stored, now, drainPolicy, settled)
			assert.Equal(t, d, again, "pure: the same arguments give the same drain")
			assert.Equal(t, dec, dec2)
		})
	}
}

func mustEncode(t *testing.T, d circuit.Drain) error {
	t.Helper()
	d.UpdatedAt = at(40 * time.Second).UnixMilli()
	_, err := circuit.DecodeDrain(mailer.String(), drainJSON(t, d), at(time.Hour))
	return err
}

// When the scheduler replays a record as the probe: given the circuit,
// the drain's last probe and the time.
func TestProbeDue(t *testing.T) {
	grace := time.Second
	last := rollout.Record{ID: "r", Attempt: 2}
	probed := circuit.Drain{Function: mailer}.Probed(last, at(11*time.Second))
	forced, _ := circuit.Evolve(circuit.New(mailer), t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "maintenance"})
	for _, c := range []struct {
		name    string
		circuit circuit.State
		drain   circuit.Drain
		now     time.Duration
		pending bool
		due     bool
	}{
		{"not during the cool-down", open(), circuit.Drain{}, 10 * time.Second, false, false},
		{"not within the grace after it, when a call may probe", open(), circuit.Drain{}, 10*time.Second + 999*time.Millisecond, false, false},
		{"after the cool-down and the grace", open(), circuit.Drain{}, 11 * time.Second, false, true},
		{"never while an operator holds it open", forced, circuit.Drain{}, time.Hour, false, false},
		{"never for a closed circuit", circuit.New(mailer), circuit.Drain{}, time.Hour, false, false},
		{"half-open with the probe under way: no", halfOpen(), circuit.Drain{}, 11 * time.Second, false, false},
		{"half-open with the probe timed out: yes", halfOpen(), circuit.Drain{}, 15 * time.Second, false, true},
		{"not a grace after the last probe", open(), probed, 11*time.Second + 500*time.Millisecond, false, false},
		{"not while the last probe has no outcome", open(), probed, time.Minute, true, false},
		{"once it has one", open(), probed, time.Minute, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.due, c.drain.ProbeDue(c.circuit, at(c.now), grace, c.pending))
		})
	}
	assert.Equal(t, 1, probed.Probes)
	assert.Equal(t, at(11*time.Second).UnixMilli(), probed.ProbeAt)
}

// A drain's notes say each verdict of its rollout.
func TestDrainNotes(t *testing.T) {
	d := circuit.Drain{Function: mailer, Progress: rollout.Start(drainPolicy, t0)}
	d.Progress = d.Launched([]rollout.Record{{ID: "a", Attempt: 1, Refused: true}}, t0)
	failed, v := d.Settled(drainPolicy, nil, []string{"a"}, t0)
	assert.Equal(t, rollout.Retry, v.Kind)
	assert.Contains(t, failed.Note, "the next canary in 10s")
	good, v := d.Settled(drainPolicy, []string{"a"}, nil, t0)
	assert.Equal(t, rollout.Grew, v.Kind)
	assert.Contains(t, good.Note, "the canary succeeded for 1 of 1 records")
	fin := good.Finished(t0)
	assert.Equal(t, circuit.DrainDone, fin.Phase)
	assert.Equal(t, "drained: 1 records released, 1 succeeded, 0 failed", fin.Note)
}
