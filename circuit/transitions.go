package circuit

import (
	"slices"
	"strings"
	"time"
)

// Trip is what opened a circuit: the rule, its numbers, the last real
// failure and the time of the first failure of the streak.
type Trip struct {
	Cause          Cause
	Failures       int
	Calls          int
	Last           Failure
	FirstFailureAt int64
	Instance       string
	// Jitter is a random draw in [0, 1): the cool-down is cut by
	// Policy.Jitter times it (see Policy).
	Jitter float64
}

// tripped returns s opened by t at now: only a CLOSED circuit trips.
func (s State) tripped(now time.Time, p Policy, t Trip) (State, bool) {
	if s.Phase != Closed {
		return s, false
	}
	ms := now.UnixMilli()
	n := s.begin(ms, Open)
	n.CoolDownMs = p.CoolDown.Milliseconds()
	wait := p.wait(n.CoolDownMs, t.Jitter)
	n.Until = ms + wait
	n.Refused = 0
	last := t.Last
	n.Last = &last
	from := t.FirstFailureAt
	if from <= 0 || from > ms {
		from = ms
	}
	n.Incident = Incident{From: from, Opens: 1}
	n.record(Transition{At: ms, From: s.Phase, To: Open, Cause: t.Cause, Failures: t.Failures, Calls: t.Calls,
		CoolDownMs: wait, Instance: t.Instance})
	return n, true
}

// Probeable reports whether a call at now may claim the probe: OPEN, not
// forced, its cool-down passed; or HALF_OPEN with no probe, or one past
// its time.
func (s State) Probeable(now time.Time) bool {
	ms := now.UnixMilli()
	switch s.Phase {
	case Open:
		return !s.Forced && ms >= s.Until
	case HalfOpen:
		return s.Probe == nil || ms >= s.Probe.Until
	}
	return false
}

// claimed returns s with the probe claimed by c at now, when Probeable
// and c's event did not already succeed as a probe of this half-open
// (closing needs successes of distinct events): an OPEN circuit becomes
// HALF_OPEN.
func (s State) claimed(now time.Time, p Policy, c Claim) (State, bool) {
	probeable := s.Probeable(now) || (c.Early && s.Phase == Open && !s.Forced)
	if !probeable || (c.Event != "" && slices.Contains(s.Probed, c.Event)) {
		return s, false
	}
	ms := now.UnixMilli()
	n := s.clone()
	if s.Phase == Open {
		n = s.begin(ms, HalfOpen)
		n.record(Transition{At: ms, From: Open, To: HalfOpen, Cause: CauseCoolDown, CoolDownMs: s.CoolDownMs, Instance: c.Instance})
	}
	n.Probe = &Probe{Instance: c.Instance, ID: c.ID, At: ms, Until: ms + p.ProbeTimeout.Milliseconds(), Event: c.Event, Record: c.Record}
	n.UpdatedAt = ms
	return n, true
}

// idle returns s half-open at now with no probe under way, when it is
// OPEN, not forced, and its cool-down passed: the scheduler moves an open
// circuit that nothing probed, and that it has no record to probe with,
// so that the next call is the probe.
func (s State) idle(now time.Time, instance string) (State, bool) {
	ms := now.UnixMilli()
	if s.Phase != Open || s.Forced || ms < s.Until {
		return s, false
	}
	n := s.begin(ms, HalfOpen)
	n.record(Transition{At: ms, From: Open, To: HalfOpen, Cause: CauseCoolDown, CoolDownMs: s.CoolDownMs, Instance: instance})
	return n, true
}

// ProbeOf returns the probe under way for a replay of record, if the
// scheduler or an operator chose that record as the probe and its time
// has not run out.
func (s State) ProbeOf(now time.Time, record string) (Probe, bool) {
	if s.Phase != HalfOpen || s.Probe == nil || record == "" || s.Probe.Record != record || now.UnixMilli() >= s.Probe.Until {
		return Probe{}, false
	}
	return *s.Probe, true
}

// probeSucceeded returns s after probe id succeeded at now: one more
// success of a distinct event, CLOSED once there are p.Successes. A probe
// that is not the one under way (it timed out and another took over)
// changes nothing; one of an event that already succeeded as a probe
// only frees the probe.
func (s State) probeSucceeded(now time.Time, p Policy, id string) (State, bool) {
	if s.Phase != HalfOpen || s.Probe == nil || s.Probe.ID != id {
		return s, false
	}
	ms := now.UnixMilli()
	n := s.clone()
	n.Probe, n.UpdatedAt = nil, ms
	if ev := s.Probe.Event; ev != "" && slices.Contains(s.Probed, ev) {
		return n, true
	}
	if s.Successes+1 < p.Successes {
		n.Successes++
		if s.Probe.Event != "" {
			n.Probed = append(n.Probed, s.Probe.Event)
		}
		return n, true
	}
	n = s.begin(ms, Closed)
	n.Incident.To = ms
	n.record(Transition{At: ms, From: HalfOpen, To: Closed, Cause: CauseProbesSucceeded, Calls: s.Successes + 1 + s.ProbeFailures,
		Failures: s.ProbeFailures, Instance: s.Probe.Instance})
	return n, true
}

// probeAnswered returns s after probe id failed in a way that says
// nothing of the dependency (an UNRECOVERABLE failure: the event's own):
// the probe is freed, for the next call.
func (s State) probeAnswered(now time.Time, id string) (State, bool) {
	if s.Phase != HalfOpen || s.Probe == nil || s.Probe.ID != id {
		return s, false
	}
	n := s.clone()
	n.Probe, n.UpdatedAt = nil, now.UnixMilli()
	return n, true
}

// probeFailed returns s after probe id failed at now with last. A probe
// may fail for its event's own reason (a bad event is a live event too),
// so one failure is not enough: the circuit opens again only once
// p.ProbeFailures probes failed for each success plus one (5 with none,
// 10 with one, ...), with twice the cool-down (at most p.MaxCoolDown), cut
// by the policy's jitter times jitter, a random draw in [0, 1); until
// then it stays HALF_OPEN and the next call probes.
func (s State) probeFailed(now time.Time, p Policy, id string, last Failure, jitter float64) (State, bool) {
	if s.Phase != HalfOpen || s.Probe == nil || s.Probe.ID != id {
		return s, false
	}
	ms := now.UnixMilli()
	if s.ProbeFailures+1 < p.ProbeFailures*(s.Successes+1) {
		n := s.clone()
		n.Probe, n.UpdatedAt = nil, ms
		n.ProbeFailures++
		n.Last = &last
		return n, true
	}
	n := s.begin(ms, Open)
	n.CoolDownMs = min(max(2*s.CoolDownMs, p.CoolDown.Milliseconds()), p.MaxCoolDown.Milliseconds())
	wait := p.wait(n.CoolDownMs, jitter)
	n.Until = ms + wait
	n.Last = &last
	n.Incident.Opens++
	n.record(Transition{At: ms, From: HalfOpen, To: Open, Cause: CauseProbeFailed, Failures: s.ProbeFailures + 1,
		Calls: s.Successes + s.ProbeFailures + 1, CoolDownMs: wait, Instance: s.Probe.Instance})
	return n, true
}

// byOperator returns s set to phase to by an operator (actor, reason) at now:
// OPEN stays open until an operator closes it; CLOSED ends the incident,
// which starts the recovery drain. Setting the phase it has (an OPEN
// circuit that is already forced) changes nothing, nor does an operator
// without a name: every operator's transition names its actor.
func (s State) byOperator(now time.Time, to Phase, actor, reason string) (State, bool) {
	ms := now.UnixMilli()
	switch {
	case strings.TrimSpace(actor) == "":
		return s, false
	case to == Open && s.Phase == Open && s.Forced:
		return s, false
	case to == Closed && s.Phase == Closed:
		return s, false
	case to != Open && to != Closed:
		return s, false
	}
	n := s.begin(ms, to)
	if to == Open {
		n.Forced = true
		switch s.Phase {
		case Closed:
			n.Refused = 0
			n.Incident = Incident{From: ms, Opens: 1}
		case HalfOpen:
			n.Incident.Opens++
		}
	} else {
		n.Incident.To = ms
		if n.Incident.From == 0 {
			n.Incident.From = ms
		}
	}
	n.record(Transition{At: ms, From: s.Phase, To: to, Cause: CauseOperator, Actor: actor, Reason: reason})
	return n, true
}

// recovered returns s after a replay of the function succeeded at now
// while its circuit is closed, the instance having seen it fail since
// from: the incident [from, now] (joined to the last one if they
// overlap), which the recovery drain then drains. Nothing changes while
// the circuit is not closed, or if the incident already covers it.
func (s State) recovered(now time.Time, from int64) (State, bool) {
	ms := now.UnixMilli()
	if s.Phase != Closed || from <= 0 || from > ms {
		return s, false
	}
	if s.Incident.From != 0 && s.Incident.From <= from && s.Incident.To >= ms {
		return s, false
	}
	n := s.clone()
	if n.Incident.From != 0 && n.Incident.To >= from {
		n.Incident.From = min(n.Incident.From, from)
	} else {
		n.Incident = Incident{From: from}
	}
	n.Incident.To = ms
	n.UpdatedAt = ms
	return n, true
}

// withRefused returns s with n more refused calls.
func (s State) withRefused(n int64, now time.Time) State {
	c := s.clone()
	if c.Phase != Closed {
		c.Refused += n
	}
	c.RefusedTotal += n
	c.UpdatedAt = now.UnixMilli()
	return c
}

// Calls reports whether a call (not a probe) may go through at now.
func (s State) Calls() bool { return s.Phase == Closed }

// LastTransition returns the newest transition, if any.
func (s State) LastTransition() (Transition, bool) {
	if len(s.Transitions) == 0 {
		return Transition{}, false
	}
	return s.Transitions[len(s.Transitions)-1], true
}

// begin returns a copy of s entering phase at ms, with the fields of the
// phase before cleared.
func (s State) begin(ms int64, phase Phase) State {
	n := s.clone()
	n.Phase, n.Since, n.UpdatedAt = phase, ms, ms
	n.Until, n.Forced, n.Probe, n.Successes, n.Probed, n.ProbeFailures = 0, false, nil, 0, nil, 0
	return n
}

// record appends t, numbered, counting it.
func (n *State) record(t Transition) {
	switch t.To {
	case Open:
		n.Counts.Opened++
	case HalfOpen:
		n.Counts.HalfOpened++
	case Closed:
		n.Counts.Closed++
	}
	t.Seq = n.Counts.Total()
	n.Transitions = append(n.Transitions, t)
	if len(n.Transitions) > MaxTransitions {
		n.Transitions = n.Transitions[len(n.Transitions)-MaxTransitions:]
	}
}

// clone copies s deeply enough that changing the copy leaves s alone.
func (s State) clone() State {
	n := s
	n.Transitions = append([]Transition(nil), s.Transitions...)
	if s.Probe != nil {
		p := *s.Probe
		n.Probe = &p
	}
	if s.Last != nil {
		l := *s.Last
		n.Last = &l
	}
	n.Probed = slices.Clone(s.Probed)
	return n
}
