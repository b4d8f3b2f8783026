package circuit

import "time"

// Observation is something a circuit learns: a Trip (the breaker's
// evidence opened it), a Claim of the probe, the probe's ProbeSuccess,
// ProbeSilence or ProbeFailure, an IdleTick of the scheduler, an
// OperatorSet, a Recovery a replay reported, Refusals counted.
type Observation interface {
	evolve(s State, now time.Time, p Policy) (State, bool)
}

// Evolve returns s after o at now under p, the function's resolved
// policy (an observation that does not depend on it ignores it), and
// whether anything changed. It is the one way a circuit changes: the
// breaker, the scheduler and the server call it inside the store's
// compare-and-set (Store.Update) and only carry out what results. It is
// pure and never changes s.
func Evolve(s State, now time.Time, p Policy, o Observation) (State, bool) {
	return o.evolve(s, now, p)
}

func (t Trip) evolve(s State, now time.Time, p Policy) (State, bool) { return s.tripped(now, p, t) }

func (c Claim) evolve(s State, now time.Time, p Policy) (State, bool) { return s.claimed(now, p, c) }

// ProbeSuccess: probe ID succeeded.
type ProbeSuccess struct{ ID string }

func (o ProbeSuccess) evolve(s State, now time.Time, p Policy) (State, bool) {
	return s.probeSucceeded(now, p, o.ID)
}

// ProbeSilence: probe ID failed in a way that says nothing of the
// dependency (the event's own, UNRECOVERABLE failure), or its record's
// replay did not run as the probe.
type ProbeSilence struct{ ID string }

func (o ProbeSilence) evolve(s State, now time.Time, _ Policy) (State, bool) {
	return s.probeAnswered(now, o.ID)
}

// ProbeFailure: probe ID failed with Last; Jitter is a random draw in
// [0, 1) that cuts the next cool-down (see Policy).
type ProbeFailure struct {
	ID     string
	Last   Failure
	Jitter float64
}

func (o ProbeFailure) evolve(s State, now time.Time, p Policy) (State, bool) {
	return s.probeFailed(now, p, o.ID, o.Last, o.Jitter)
}

// IdleTick: the scheduler saw the cool-down of an open circuit pass with
// no call probing it and no record to probe with.
type IdleTick struct{ Instance string }

func (o IdleTick) evolve(s State, now time.Time, _ Policy) (State, bool) {
	return s.idle(now, o.Instance)
}

// OperatorSet: an operator (Actor, for Reason) set the phase to To, OPEN
// or CLOSED. One without an Actor changes nothing.
type OperatorSet struct {
	To            Phase
	Actor, Reason string
}

func (o OperatorSet) evolve(s State, now time.Time, _ Policy) (State, bool) {
	return s.byOperator(now, o.To, o.Actor, o.Reason)
}

// Recovery: a replay of the function succeeded while its circuit was
// closed, the instance having seen it fail since From (epoch ms).
type Recovery struct{ From int64 }

func (o Recovery) evolve(s State, now time.Time, _ Policy) (State, bool) {
	return s.recovered(now, o.From)
}

// Refusals: an instance refused N more calls.
type Refusals struct{ N int64 }

func (o Refusals) evolve(s State, now time.Time, _ Policy) (State, bool) {
	if o.N <= 0 {
		return s, false
	}
	return s.withRefused(o.N, now), true
}
