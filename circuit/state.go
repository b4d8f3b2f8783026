package circuit

import (
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
