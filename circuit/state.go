package circuit

import (
	"slices"
	"strings"
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// Phase is a circuit's state.
type Phase string

// The phases.
const (
	// Closed: the function is called.
	Closed Phase = "CLOSED"
	// Open: the function is not called; each call gets an OpenError, so
	// the event's failure is recorded at once with errorCode CircuitOpen.
	Open Phase = "OPEN"
	// HalfOpen: one call at a time is let through as a probe.
	HalfOpen Phase = "HALF_OPEN"
)

// Phases lists the phases.
var Phases = []Phase{Closed, Open, HalfOpen}

// Cause is why a circuit changed.
type Cause string

// The causes of transitions.
const (
	// CauseConsecutive: ConsecutiveFailures calls in a row failed.
	CauseConsecutive Cause = "consecutive_failures"
	// CauseRatio: FailureRatio of at least MinCalls calls in Window failed.
	CauseRatio Cause = "failure_ratio"
	// CauseCoolDown: the cool-down passed and a probe was claimed.
	CauseCoolDown Cause = "cool_down_passed"
	// CauseProbeFailed: the probe failed.
	CauseProbeFailed Cause = "probe_failed"
	// CauseProbesSucceeded: Successes probes in a row succeeded.
	CauseProbesSucceeded Cause = "probes_succeeded"
	// CauseOperator: an operator opened or closed it.
	CauseOperator Cause = "operator"
	// CauseDrain: the recovery drain's canary failed while it was
	// closed. Only transitions stored by earlier versions have it: the
	// drain no longer opens circuits, since a drained record that fails
	// may fail for its own reason; its fresh calls count like any other.
	CauseDrain Cause = "drain_failed"
)

// Causes lists the causes.
var Causes = []Cause{CauseConsecutive, CauseRatio, CauseCoolDown, CauseProbeFailed, CauseProbesSucceeded, CauseOperator, CauseDrain}

// MaxTransitions bounds the transitions a State keeps, the newest.
const MaxTransitions = 20

// State is a function's circuit as the bucket keeps it, shared by the
// function's instances. Times are epoch milliseconds.
type State struct {
	Function Function `json:"function"`
	Phase    Phase    `json:"phase"`
	// Since is when the circuit entered its phase.
	Since int64 `json:"since"`
	// Until is, while OPEN, the earliest time of a probe; 0 when an
	// operator opened it (Forced).
	Until int64 `json:"until,omitempty"`
	// CoolDownMs is the cool-down of the current or last opening.
	CoolDownMs int64 `json:"coolDownMs,omitempty"`
	// Forced reports an operator's open: no probe until an operator closes
	// it.
	Forced bool `json:"forced,omitempty"`
	// Probe is, while HALF_OPEN, the probe under way.
	Probe *Probe `json:"probe,omitempty"`
	// Successes counts, while HALF_OPEN, the probes of distinct events
	// that succeeded; Probed lists those events (at most Policy.Successes,
	// so at most 100), and ProbeFailures counts the probes that failed.
	Successes     int      `json:"successes,omitempty"`
	Probed        []string `json:"probed,omitempty"`
	ProbeFailures int      `json:"probeFailures,omitempty"`
	// Refused counts the calls refused since the circuit last opened from
	// closed, re-opens included (the incident's); RefusedTotal all of
	// them. Instances add theirs about once a second.
	Refused      int64 `json:"refused"`
	RefusedTotal int64 `json:"refusedTotal"`
	// Last is the last real failure that counted towards opening (or that
	// failed a probe): refused calls' records carry its message and
	// fingerprint.
	Last *Failure `json:"last,omitempty"`
	// Incident is the span of the last outage: from the first failure of
	// the streak that opened the circuit to when it closed (To 0 while it
	// is not closed). A closed incident newer than the last drained one
	// starts the recovery drain of the records it left.
	Incident Incident `json:"incident"`
	// Counts count the transitions into each phase.
	Counts Counts `json:"counts"`
	// Transitions are the last MaxTransitions transitions, oldest first.
	Transitions []Transition `json:"transitions"`
	UpdatedAt   int64        `json:"updatedAt"`
}

// Probe is the probe call under way while half-open: who makes it, and
// until when it is theirs; the event it calls for, and, when the
// scheduler or an operator chose a record to probe with, that record (its
// replay is the probe, whichever instance runs it).
type Probe struct {
	Instance string `json:"instance"`
	ID       string `json:"id"`
	At       int64  `json:"at"`
	Until    int64  `json:"until"`
	Event    string `json:"event,omitempty"`
	Record   string `json:"record,omitempty"`
}

// Claim is who claims the probe, for which event and, for a record's
// replay chosen as the probe, which record. Early claims it before the
// cool-down has passed: an operator who asks for a record's replay to be
// the probe.
type Claim struct {
	Instance, ID, Event, Record string
	Early                       bool
}

// Failure is what a refused call's record says of the last real failure.
type Failure struct {
	Code        string                   `json:"code"`
	Message     string                   `json:"message"`
	Fingerprint string                   `json:"fingerprint,omitempty"`
	Recoverable aggregate.Recoverability `json:"recoverable,omitempty"`
	At          int64                    `json:"at"`
}

// Incident is an outage's span, epoch ms; To is 0 while it lasts. Opens
// counts the circuit's openings within it: the first, and every re-open
// after failed probes or by an operator from half-open (27 re-opens of one
// outage are one incident with Opens 28, not 28 incidents).
type Incident struct {
	From  int64 `json:"from,omitempty"`
	To    int64 `json:"to,omitempty"`
	Opens int64 `json:"opens,omitempty"`
}

// Ongoing reports whether the incident has begun and not ended.
func (i Incident) Ongoing() bool { return i.From != 0 && i.To == 0 }

// Counts count a circuit's transitions into each phase.
type Counts struct {
	Opened     int64 `json:"opened"`
	HalfOpened int64 `json:"halfOpened"`
	Closed     int64 `json:"closed"`
}

// Total is the number of transitions.
func (c Counts) Total() int64 { return c.Opened + c.HalfOpened + c.Closed }

// Transition is one change of phase, with the numbers that caused it.
type Transition struct {
	// Seq numbers the circuit's transitions from 1.
	Seq      int64 `json:"seq"`
	At       int64 `json:"at"`
	From     Phase `json:"from"`
	To       Phase `json:"to"`
	Cause    Cause `json:"cause"`
	Failures int   `json:"failures,omitempty"`
	Calls    int   `json:"calls,omitempty"`
	// CoolDownMs is the cool-down of an opening.
	CoolDownMs int64  `json:"coolDownMs,omitempty"`
	Instance   string `json:"instance,omitempty"`
	Actor      string `json:"actor,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// New returns the closed circuit of f, as a function that never opened
// has.
func New(f Function) State { return State{Function: f, Phase: Closed} }

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
