package rollout_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/rollout"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func records(ids ...string) []rollout.Record {
	out := make([]rollout.Record, len(ids))
	for i, id := range ids {
		out[i] = rollout.Record{ID: id, Attempt: 1, Refused: true}
	}
	return out
}

// launch prepares the next batch of p with ids and settles it with ok
// succeeding and the rest failing.
func launch(t *testing.T, pol rollout.Policy, p rollout.Progress, now time.Time, ids []string, ok ...string) (rollout.Progress, rollout.Verdict) {
	t.Helper()
	n, due := p.Next(pol, now)
	require.True(t, due, "a batch is due at %s: %+v", now, p)
	require.LessOrEqual(t, len(ids), n)
	p = p.Launched(records(ids...), now)
	_, due = p.Next(pol, now)
	require.False(t, due, "nothing is due while a batch is under way")
	var failed []string
	for _, id := range ids {
		if !contains(ok, id) {
			failed = append(failed, id)
		}
	}
	return p.Settled(pol, ok, failed, now)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestSteppedCanaryStepsThenDone(t *testing.T) {
	pol := rollout.Stepped{Canary: 1, Steps: []int{2, 0}, Threshold: 0.9}
	p := rollout.Start(pol, t0)
	assert.Equal(t, rollout.PhaseCanary, p.Phase)

	p, v := launch(t, pol, p, t0, []string{"a"}, "a")
	assert.Equal(t, rollout.Grew, v.Kind)
	assert.Equal(t, "canary", v.What)
	assert.Equal(t, rollout.PhaseSteps, p.Phase)

	n, due := p.Next(pol, t0)
	require.True(t, due)
	assert.Equal(t, 2, n, "the first step is the policy's")
	p, v = launch(t, pol, p, t0, []string{"b", "c"}, "b", "c")
	assert.Equal(t, "step 1", v.What)
	n, _ = p.Next(pol, t0)
	assert.Equal(t, rollout.MaxBatch, n, "a step of 0 is all the rest, a batch at a time")
	p, _ = launch(t, pol, p, t0, []string{"d"}, "d")
	n, due = p.Next(pol, t0)
	assert.True(t, due)
	assert.Equal(t, rollout.MaxBatch, n, "the 'all' step repeats until the owner finds nothing left")

	p = p.Finished(t0)
	assert.Equal(t, rollout.PhaseDone, p.Phase)
	assert.Equal(t, [3]int{4, 4, 0}, [3]int{p.Released, p.Succeeded, p.Failed})
	_, due = p.Next(pol, t0)
	assert.False(t, due, "a finished rollout prepares nothing")
}

func TestSteppedEndsAfterItsLastStep(t *testing.T) {
	pol := rollout.Stepped{Canary: 1, Steps: []int{1}, Threshold: 0.5}
	p := rollout.Start(pol, t0)
	p, _ = launch(t, pol, p, t0, []string{"a"}, "a")
	p, _ = launch(t, pol, p, t0, []string{"b"}, "b")
	n, due := p.Next(pol, t0)
	assert.True(t, due)
	assert.Zero(t, n, "no step left: the owner finishes the rollout")
}

func TestSteppedHaltsBelowTheThreshold(t *testing.T) {
	pol := rollout.Stepped{Canary: 2, Steps: []int{5}, Threshold: 0.9}
	p := rollout.Start(pol, t0)
	p, v := launch(t, pol, p, t0, []string{"a", "b"}, "a")
	assert.Equal(t, rollout.Halt, v.Kind)
	assert.Equal(t, []string{"b"}, v.Failed)
	assert.InDelta(t, 0.5, v.Ratio, 1e-9)
	p = p.Halted("the canary failed", t0)
	assert.Equal(t, rollout.PhaseHalted, p.Phase)
	_, due := p.Next(pol, t0)
	assert.False(t, due, "a halted rollout is never acted on again")
	assert.Contains(t, pol.CanContinue(rollout.Progress{Phase: rollout.PhaseSteps, Step: 2}), "past the 1 steps of the policy")
	assert.Empty(t, pol.CanContinue(rollout.Progress{Phase: rollout.PhaseSteps, Step: 1}))
}

func TestAdaptiveDoublesHalvesAndRetries(t *testing.T) {
	pol := rollout.Adaptive{Canary: 1, Threshold: 0.5, Rate: 8, Retry: 10 * time.Second}
	p := rollout.Start(pol, t0)
	assert.Equal(t, 1, p.Size)
	assert.InDelta(t, 8, p.Rate, 0)

	// A canary below the threshold waits the retry and tries again.
	p, v := launch(t, pol, p, t0, []string{"a"})
	assert.Equal(t, rollout.Retry, v.Kind)
	assert.Equal(t, 10*time.Second, v.Wait)
	_, due := p.Next(pol, t0.Add(9*time.Second))
	assert.False(t, due, "the retry waits")
	now := t0.Add(10 * time.Second)
	p, v = launch(t, pol, p, now, []string{"b"}, "b")
	assert.Equal(t, rollout.Grew, v.Kind)
	assert.Equal(t, 2, p.Size, "a good canary doubles")

	// Steps are paced by the rate: two records at 8/s wait 250 ms.
	p = p.Launched(records("c", "d"), now)
	_, due = p.Next(pol, now)
	assert.False(t, due)
	p, _ = p.Settled(pol, []string{"c", "d"}, nil, now)
	_, due = p.Next(pol, now.Add(249*time.Millisecond))
	assert.False(t, due, "the rate paces the next step")
	now = now.Add(250 * time.Millisecond)
	n, due := p.Next(pol, now)
	require.True(t, due)
	assert.Equal(t, 4, n)

	// Growth stops at a second's worth at the rate.
	p, _ = launch(t, pol, p, now.Add(time.Hour), []string{"e", "f", "g", "h"}, "e", "f", "g", "h")
	assert.Equal(t, 8, p.Size)
	now = now.Add(2 * time.Hour)
	p, _ = launch(t, pol, p, now, []string{"i", "j", "k", "l", "m", "n", "o", "p"}, "i", "j", "k", "l", "m", "n", "o", "p")
	assert.Equal(t, 8, p.Size, "at most a second's worth at the policy's rate")

	// A step below the threshold halves the step and the rate.
	now = now.Add(time.Hour)
	p, v = launch(t, pol, p, now, []string{"q", "r", "s", "t"}, "q")
	assert.Equal(t, rollout.Halved, v.Kind)
	assert.Equal(t, 4, p.Size)
	assert.InDelta(t, 4, p.Rate, 0)
	// and a good one wins it back.
	now = now.Add(time.Hour)
	p, v = launch(t, pol, p, now, []string{"u"}, "u")
	assert.Equal(t, rollout.Grew, v.Kind)
	assert.InDelta(t, 8, p.Rate, 0)
	assert.Equal(t, 8, p.Size)
}

func TestAdaptiveJudgesByRefusedRecordsOnly(t *testing.T) {
	pol := rollout.Adaptive{Canary: 4, Threshold: 0.5, Rate: 100, Retry: time.Second}
	p := rollout.Start(pol, t0)
	batch := []rollout.Record{{ID: "bad1", Attempt: 3}, {ID: "bad2", Attempt: 3}, {ID: "bad3", Attempt: 3}, {ID: "ok", Attempt: 1, Refused: true}}
	p = p.Launched(batch, t0)
	p, v := p.Settled(pol, []string{"ok"}, []string{"bad1", "bad2", "bad3"}, t0)
	assert.Equal(t, rollout.Grew, v.Kind, "records that failed for their own reason before do not judge the step")
	assert.Equal(t, [2]int{1, 1}, [2]int{v.Judged, v.Good})
	assert.Equal(t, [3]int{4, 1, 3}, [3]int{p.Released, p.Succeeded, p.Failed})

	p = p.Launched([]rollout.Record{{ID: "x", Attempt: 2}}, t0.Add(time.Minute))
	_, v = p.Settled(pol, nil, []string{"x"}, t0.Add(time.Minute))
	assert.Equal(t, rollout.Grew, v.Kind, "a batch with no refused record is judged good")
}

func TestAbortedCountsOnlyWhatSettled(t *testing.T) {
	pol := rollout.Adaptive{Canary: 3, Threshold: 0.5, Rate: 100, Retry: time.Second}
	p := rollout.Start(pol, t0).Launched(records("a", "b", "c"), t0)
	p = p.Aborted([]string{"a"}, []string{"b"}, t0)
	assert.Empty(t, p.Batch)
	assert.Equal(t, [3]int{2, 1, 1}, [3]int{p.Released, p.Succeeded, p.Failed})
}

func TestSettledWithoutABatchChangesNothing(t *testing.T) {
	pol := rollout.Stepped{Canary: 1, Threshold: 1}
	p := rollout.Start(pol, t0)
	n, v := p.Settled(pol, nil, nil, t0)
	assert.Equal(t, p, n)
	assert.Zero(t, v.Kind)
}

func TestPolicyChecks(t *testing.T) {
	assert.NoError(t, rollout.Stepped{Canary: 1, Steps: []int{1, 0}, Threshold: 0.9}.Check())
	assert.ErrorContains(t, rollout.Stepped{Canary: 0, Threshold: 0.9}.Check(), "canary")
	assert.ErrorContains(t, rollout.Stepped{Canary: 1, Threshold: 0}.Check(), "threshold")
	assert.ErrorContains(t, rollout.Stepped{Canary: 1, Threshold: 1, Steps: []int{-1}}.Check(), "steps")
	assert.NoError(t, rollout.Adaptive{Canary: 1, Threshold: 0.5, Rate: 200, Retry: time.Second}.Check(1000))
	assert.ErrorContains(t, rollout.Adaptive{Canary: 1, Threshold: 0.5, Rate: 2000, Retry: time.Second}.Check(1000), "rate")
	assert.ErrorContains(t, rollout.Adaptive{Canary: 1, Threshold: 0.5, Rate: 200}.Check(1000), "retry")
}

func TestCheckRefusesEachBadField(t *testing.T) {
	b := rollout.Bounds{Phases: []string{"waiting"}, MaxStep: 10, MaxRate: 1000, MaxWait: time.Hour}
	ms := t0.UnixMilli()
	good := rollout.Progress{Phase: rollout.PhaseSteps, Judged: 2, Size: 4, Rate: 10, StartedAt: ms, Batch: records("a", "b"), BatchAt: ms,
		NextAt: ms + 1000, Released: 3, Succeeded: 2, Failed: 1, Note: "fine", UpdatedAt: ms}
	require.NoError(t, good.Check(t0, b))
	require.NoError(t, rollout.Progress{Phase: "waiting", UpdatedAt: ms}.Check(t0, b), "an owner's phase")
	cases := map[string]func(*rollout.Progress){
		"phase":            func(p *rollout.Progress) { p.Phase = "paused" },
		"step":             func(p *rollout.Progress) { p.Step = 11 },
		"steps":            func(p *rollout.Progress) { p.Judged = -1 },
		"size":             func(p *rollout.Progress) { p.Size = 0 },
		"rate":             func(p *rollout.Progress) { p.Rate = 1e9 },
		"startedAt":        func(p *rollout.Progress) { p.StartedAt = t0.Add(time.Hour).UnixMilli() },
		"nextAt":           func(p *rollout.Progress) { p.NextAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() },
		"batch":            func(p *rollout.Progress) { p.Phase = rollout.PhaseDone },
		"batch[1].id":      func(p *rollout.Progress) { p.Batch[1].ID = "a" },
		"batch[0].attempt": func(p *rollout.Progress) { p.Batch[0].Attempt = 0 },
		"released":         func(p *rollout.Progress) { p.Failed = 2 },
		"halt":             func(p *rollout.Progress) { p.Halt = "why" },
		"note":             func(p *rollout.Progress) { p.Note = "bad\x00" },
	}
	for field, mutate := range cases {
		p := good
		p.Batch = append([]rollout.Record(nil), good.Batch...)
		mutate(&p)
		err := p.Check(t0, b)
		var fe *kvstore.FieldError
		require.True(t, errors.As(err, &fe), "%s: %v", field, err)
		assert.Equal(t, field, fe.Field, "%s: %v", field, err)
	}
	unpaced := rollout.Bounds{MaxStep: 10}
	assert.ErrorContains(t, rollout.Progress{Phase: rollout.PhaseCanary, Rate: 1, UpdatedAt: ms}.Check(t0, unpaced), "not paced")
}
