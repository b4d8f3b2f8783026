package rollout

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The phases of a rollout under way or over. Owners add a phase of their
// own before it starts (a drain's "waiting", a release's "baseline").
const (
	PhaseCanary = "canary"
	PhaseSteps  = "steps"
	PhaseDone   = "done"
	PhaseHalted = "halted"
)

// MaxBatch bounds the records of one batch; a larger step is prepared
// over several batches.
const MaxBatch = 500

// Record is a record a rollout prepared and the attempt it was prepared
// as.
type Record struct {
	ID      string `json:"id"`
	Attempt int32  `json:"attempt"`
	// Refused reports a record whose last failure was a refusal by its
	// function's circuit: its replay is the first call of its event.
	Refused bool `json:"refused,omitempty"`
}

// Progress is a rollout's progress as its owner stores it. Times are
// epoch ms.
type Progress struct {
	Phase string `json:"phase"`
	// Step is, under Stepped, the index in its steps of the step to come.
	Step int `json:"step,omitempty"`
	// Judged counts the batches (the canary included) judged.
	Judged int `json:"steps"`
	// Size is the records of the next batch and Rate the records per
	// second it may prepare (Adaptive).
	Size int     `json:"size,omitempty"`
	Rate float64 `json:"rate,omitempty"`
	// StartedAt is when the rollout began.
	StartedAt int64 `json:"startedAt,omitempty"`
	// Batch is the batch under way, prepared at BatchAt; the next begins
	// no sooner than NextAt.
	Batch   []Record `json:"batch,omitempty"`
	BatchAt int64    `json:"batchAt,omitempty"`
	NextAt  int64    `json:"nextAt,omitempty"`
	// Released, Succeeded and Failed count the records of the batches
	// judged or given up.
	Released  int `json:"released"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Note says what the rollout does now; Halt why it halted.
	Note      string `json:"note,omitempty"`
	Halt      string `json:"halt,omitempty"`
	DoneAt    int64  `json:"doneAt,omitempty"`
	UpdatedAt int64  `json:"updatedAt"`
}

// Start returns a rollout of pol begun at now, at its canary.
func Start(pol Policy, now time.Time) Progress {
	ms := now.UnixMilli()
	p := Progress{Phase: PhaseCanary, StartedAt: ms, UpdatedAt: ms}
	p.Size, p.Rate = pol.start()
	return p
}

// Running reports whether the rollout is at its canary or its steps.
func (p Progress) Running() bool { return p.Phase == PhaseCanary || p.Phase == PhaseSteps }

// Label names the batch to come or under way: "canary" or "step N".
func (p Progress) Label() string {
	if p.Phase == PhaseSteps {
		return fmt.Sprintf("step %d", p.Judged)
	}
	return "canary"
}

// Next returns how many records the next batch of a running rollout with
// no batch under way may prepare at now: 0 and due false while a batch is
// under way or its pace says wait; 0 and due true when pol has no step
// left (the owner ends the rollout: Finished).
func (p Progress) Next(pol Policy, now time.Time) (n int, due bool) {
	if !p.Running() || len(p.Batch) > 0 || now.UnixMilli() < p.NextAt {
		return 0, false
	}
	return min(pol.size(p), MaxBatch), true
}

// Launched returns p with batch under way from now; the next batch is
// paced by the rate, if any.
func (p Progress) Launched(batch []Record, now time.Time) Progress {
	ms := now.UnixMilli()
	n := p.clone()
	n.Batch, n.BatchAt, n.UpdatedAt = slices.Clone(batch), ms, ms
	if p.Rate > 0 {
		n.NextAt = ms + int64(math.Ceil(float64(len(batch))/p.Rate*1000))
	}
	return n
}

// Verdict is what a settled batch decided.
type Verdict struct {
	Kind Kind
	// What names the batch judged: "canary" or "step N".
	What string
	// Released is the batch's size; Failed lists the records that
	// failed (those a halt marks); Judged and Good count the records that
	// judge the batch (all, or those the policy judges by) and the ones of
	// them that succeeded.
	Released     int
	Failed       []string
	Judged, Good int
	Ratio        float64
	Threshold    float64
	// Wait is how long a Retry waits.
	Wait time.Duration
}

// Kind is a verdict's decision.
type Kind int

// The decisions on a settled batch.
const (
	// Grew: the batch met the threshold; the rollout goes on.
	Grew Kind = iota + 1
	// Halved: a step below the threshold; the next is half as large.
	Halved
	// Retry: a canary below the threshold; the next waits Verdict.Wait.
	Retry
	// Halt: below the threshold under a policy that halts; the owner
	// halts the rollout (Halted).
	Halt
)

// Settled returns p after its batch under way settled at now, ok listing
// the records that succeeded and failed the others, and the verdict the
// policy gives. A rollout without a batch under way is returned as it is,
// with a zero Verdict.
func (p Progress) Settled(pol Policy, ok, failed []string, now time.Time) (Progress, Verdict) {
	if len(p.Batch) == 0 {
		return p, Verdict{}
	}
	v := Verdict{What: p.Label(), Released: len(p.Batch), Failed: failed}
	for _, r := range p.Batch {
		if !pol.judges(r) {
			continue
		}
		v.Judged++
		if slices.Contains(ok, r.ID) {
			v.Good++
		}
	}
	v.Ratio = 1
	if v.Judged > 0 {
		v.Ratio = float64(v.Good) / float64(v.Judged)
	}
	n := p.clone()
	n.Released += len(p.Batch)
	n.Succeeded += len(ok)
	n.Failed += len(failed)
	n.Judged++
	n.Batch, n.BatchAt = nil, 0
	n.UpdatedAt = now.UnixMilli()
	return pol.judge(n, v, now)
}

// Aborted returns p with its batch given up: the records of it that have
// an outcome (in ok or failed) are counted, the others are not.
func (p Progress) Aborted(ok, failed []string, now time.Time) Progress {
	n := p.clone()
	for _, r := range p.Batch {
		switch {
		case slices.Contains(ok, r.ID):
			n.Released++
			n.Succeeded++
		case slices.Contains(failed, r.ID):
			n.Released++
			n.Failed++
		}
	}
	n.Batch, n.BatchAt, n.NextAt, n.UpdatedAt = nil, 0, 0, now.UnixMilli()
	return n
}

// Finished returns p done at now, with no batch under way.
func (p Progress) Finished(now time.Time) Progress {
	n := p.clone()
	ms := now.UnixMilli()
	n.Phase, n.DoneAt, n.UpdatedAt = PhaseDone, ms, ms
	n.Batch, n.BatchAt, n.NextAt, n.Size = nil, 0, 0, 0
	return n
}

// Halted returns p halted at now for reason; a halted rollout is never
// acted on again.
func (p Progress) Halted(reason string, now time.Time) Progress {
	n := p.clone()
	n.Phase, n.Halt, n.UpdatedAt = PhaseHalted, reason, now.UnixMilli()
	n.Batch, n.BatchAt, n.NextAt = nil, 0, 0
	return n
}

func (p Progress) clone() Progress {
	p.Batch = slices.Clone(p.Batch)
	return p
}
