package rollout

import (
	"fmt"
	"math"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
)

// Policy says how a rollout grows and what a batch below its threshold
// does. Stepped and Adaptive are the policies.
type Policy interface {
	// start returns the canary's size and the first rate (0: unpaced).
	start() (size int, rate float64)
	// size returns the records of the next batch of p; 0 when no step
	// is left.
	size(p Progress) int
	// judges reports whether r's outcome judges its batch.
	judges(r Record) bool
	// judge applies v, the verdict's numbers, to n, the progress with
	// the batch counted.
	judge(n Progress, v Verdict, now time.Time) (Progress, Verdict)
}

// Stepped is the deploy release's policy: Canary records, then batches of
// the sizes in Steps (0 means all the rest, in batches of at most
// MaxBatch), each while the share of the last batch's records that
// succeeded is at least Threshold. A batch below it halts the rollout
// (Verdict Halt): a build that fails its parked records is not given the
// others. Every record judges its batch.
type Stepped struct {
	Canary    int
	Steps     []int
	Threshold float64
}

// Check returns an error naming the field when p cannot drive a rollout:
// a canary of 1 to MaxBatch records, steps of 0 or more records, and a
// threshold above 0 and at most 1.
func (s Stepped) Check() error {
	if err := checkCommon(s.Canary, s.Threshold); err != nil {
		return err
	}
	for _, n := range s.Steps {
		if n < 0 {
			return fmt.Errorf("steps must be 0 (all the rest) or positive, got %d", n)
		}
	}
	return nil
}

// CanContinue reports, as a reason to halt, a rollout p this policy
// cannot continue: a step past its steps (the policy changed, or the
// stored progress was edited). "" if it can.
func (s Stepped) CanContinue(p Progress) string {
	if p.Phase == PhaseSteps && p.Step > len(s.Steps) {
		return fmt.Sprintf("the rollout is at step %d, past the %d steps of the policy (it changed since, or the entry was edited)", p.Step+1, len(s.Steps))
	}
	return ""
}

func (s Stepped) start() (int, float64) { return s.Canary, 0 }

func (s Stepped) size(p Progress) int {
	if p.Phase == PhaseCanary {
		return s.Canary
	}
	if p.Step >= len(s.Steps) {
		return 0
	}
	if n := s.Steps[p.Step]; n != 0 {
		return n
	}
	return MaxBatch
}

func (Stepped) judges(Record) bool { return true }

func (s Stepped) judge(n Progress, v Verdict, _ time.Time) (Progress, Verdict) {
	v.Threshold = s.Threshold
	if v.Ratio < s.Threshold {
		v.Kind = Halt
		return n, v
	}
	v.Kind = Grew
	switch {
	case n.Phase == PhaseCanary:
		n.Phase, n.Step = PhaseSteps, 0
	case n.Step < len(s.Steps) && s.Steps[n.Step] != 0:
		n.Step++ // an "all" step repeats until nothing is left
	}
	return n, v
}

// MinRate is the slowest an Adaptive rollout halves to, records per
// second.
const MinRate = 1.0

// Adaptive is the recovery drain's policy: Canary records, then steps
// that double while at least Threshold of the last one's judged records
// succeeded, up to a second's worth at Rate records per second (at most
// MaxBatch); a step below it halves the step and the rate (to Canary
// and MinRate at least); a canary below it waits Retry and tries the next
// records (Verdict Retry), since a record may fail for its own reason. A
// batch is judged by its records the circuit had refused (Record.Refused:
// their replay is the first call of their event, so it fails only if the
// dependency does); one with none of them is judged good. A batch is
// launched no sooner than its predecessor's records at the rate.
type Adaptive struct {
	Canary    int
	Threshold float64
	Rate      float64
	Retry     time.Duration
}

// Check returns an error naming the field when a cannot drive a rollout:
// a canary of 1 to MaxBatch records, a threshold above 0 and at most 1, a
// rate from MinRate to max records per second and a retry wait above 0.
func (a Adaptive) Check(max float64) error {
	if err := checkCommon(a.Canary, a.Threshold); err != nil {
		return err
	}
	switch {
	case math.IsNaN(a.Rate) || !bounds.Within(a.Rate, MinRate, max):
		return fmt.Errorf("rate must be from %v to %v records/s, got %v", MinRate, max, a.Rate)
	case a.Retry <= 0:
		return fmt.Errorf("retry wait must be above 0, got %s", a.Retry)
	}
	return nil
}

func (a Adaptive) start() (int, float64) { return a.Canary, a.Rate }

func (Adaptive) size(p Progress) int { return p.Size }

func (Adaptive) judges(r Record) bool { return r.Refused }

func (a Adaptive) judge(n Progress, v Verdict, now time.Time) (Progress, Verdict) {
	v.Threshold = a.Threshold
	switch {
	case v.Ratio >= a.Threshold:
		// A good step wins back what a bad one halved: the rate doubles
		// up to the policy's, and the step with it.
		v.Kind = Grew
		n.Phase = PhaseSteps
		n.Rate = min(2*n.Rate, a.Rate)
		n.Size = min(2*n.Size, maxStep(n.Rate))
	case n.Size > a.Canary:
		v.Kind = Halved
		n.Size = max(a.Canary, n.Size/2)
		n.Rate = max(MinRate, n.Rate/2)
	default:
		v.Kind, v.Wait = Retry, a.Retry
		n.NextAt = now.Add(a.Retry).UnixMilli()
	}
	return n, v
}

// maxStep is the largest step at rate: a second's worth, at most
// MaxBatch.
func maxStep(rate float64) int {
	return max(1, min(MaxBatch, int(math.Ceil(rate))))
}

func checkCommon(canary int, threshold float64) error {
	switch {
	case !bounds.Within(canary, 1, MaxBatch):
		return fmt.Errorf("canary must be between 1 and %d records, got %d", MaxBatch, canary)
	case !(threshold > 0 && threshold <= 1):
		return fmt.Errorf("threshold must be a fraction above 0 and at most 1, got %v", threshold)
	}
	return nil
}
