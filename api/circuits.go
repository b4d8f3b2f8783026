package api

// Circuit is a function's circuit as GET /api/v1/circuits shows it (see
// package circuit). Function is CONTEXT.PROCESSOR.NAME. Phase is CLOSED,
// OPEN or HALF_OPEN. Stored is false for a function whose circuit was
// never written (it never opened): it is CLOSED. Times are epoch ms.
type Circuit struct {
	Function  string `json:"function"`
	Context   string `json:"context"`
	Processor string `json:"processor"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Stored    bool   `json:"stored"`
	// Since is when the circuit entered its phase.
	Since int64 `json:"since,omitempty"`
	// Until is, while OPEN, the earliest probe; 0 when an operator opened
	// it (Forced), which no probe closes.
	Until      int64 `json:"until,omitempty"`
	CoolDownMs int64 `json:"coolDownMs,omitempty"`
	Forced     bool  `json:"forced,omitempty"`
	// Probe is, while HALF_OPEN, the probe under way; Successes the
	// probes of distinct events that succeeded, ProbeFailures those that
	// failed.
	Probe         *CircuitProbe `json:"probe,omitempty"`
	Successes     int           `json:"successes,omitempty"`
	ProbeFailures int           `json:"probeFailures,omitempty"`
	// Refused counts the calls refused since it last opened, RefusedTotal
	// all of them.
	Refused      int64 `json:"refused"`
	RefusedTotal int64 `json:"refusedTotal"`
	// Last is the last real failure: the refused calls' records carry its
	// message and fingerprint.
	Last *CircuitFailure `json:"last,omitempty"`
	// IncidentFrom and IncidentTo span the last outage (To 0 while it
	// lasts).
	IncidentFrom int64 `json:"incidentFrom,omitempty"`
	IncidentTo   int64 `json:"incidentTo,omitempty"`
	// IncidentOpens counts the openings of the last outage: the first and
	// every re-open (1 + re-opens).
	IncidentOpens int64 `json:"incidentOpens,omitempty"`
	// Opened, HalfOpened and Closed count the transitions into each phase.
	Opened     int64 `json:"opened"`
	HalfOpened int64 `json:"halfOpened"`
	Closed     int64 `json:"closed"`
	// Transitions are the last ones, oldest first.
	Transitions []CircuitTransition `json:"transitions"`
	UpdatedAt   int64               `json:"updatedAt,omitempty"`
}

// CircuitProbe is the probe call under way: who makes it, and for a
// record the scheduler or an operator chose as the probe, that record.
type CircuitProbe struct {
	Instance string `json:"instance"`
	At       int64  `json:"at"`
	Until    int64  `json:"until"`
	Record   string `json:"record,omitempty"`
}

// CircuitFailure is the failure a circuit keeps.
type CircuitFailure struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Recoverable string `json:"recoverable,omitempty"`
	At          int64  `json:"at"`
}

// CircuitTransition is one change of phase, with the numbers that caused
// it: the instance that made it, or the operator (actor, reason).
type CircuitTransition struct {
	Seq        int64  `json:"seq"`
	At         int64  `json:"at"`
	From       string `json:"from"`
	To         string `json:"to"`
	Cause      string `json:"cause"`
	Failures   int    `json:"failures,omitempty"`
	Calls      int    `json:"calls,omitempty"`
	CoolDownMs int64  `json:"coolDownMs,omitempty"`
	Instance   string `json:"instance,omitempty"`
	Actor      string `json:"actor,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// CircuitList is the body of GET /api/v1/circuits: the stored circuits by
// function, and the keys of those that do not validate (their functions
// are called as if closed) with why.
type CircuitList struct {
	Circuits []Circuit       `json:"circuits"`
	Invalid  []InvalidRecord `json:"invalid"`
}

// InvalidRecord is a stored value that does not validate: its key and
// why.
type InvalidRecord struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// CircuitAction is the body of POST /api/v1/circuits/{function}/open and
// /close: the reason is required (audit); a dry run says what the circuit
// would become without changing it.
type CircuitAction struct {
	Reason string `json:"reason"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// CircuitChange is the answer to an open or close: the circuit after it
// (or, for a dry run, as it would be), and whether it changed (false: it
// already was so).
type CircuitChange struct {
	Circuit Circuit `json:"circuit"`
	Changed bool    `json:"changed"`
	DryRun  bool    `json:"dryRun,omitempty"`
}

// Drain is a function's recovery drain as GET /api/v1/drains shows it
// (see package scheduler). Phase is waiting (the circuit is open), canary,
// steps or done. From and To are the incident drained. Times are epoch ms.
type Drain struct {
	Function  string  `json:"function"`
	Phase     string  `json:"phase"`
	From      int64   `json:"from"`
	To        int64   `json:"to,omitempty"`
	StartedAt int64   `json:"startedAt,omitempty"`
	Size      int     `json:"size,omitempty"`
	Rate      float64 `json:"rate,omitempty"`
	Steps     int     `json:"steps"`
	// InFlight counts the records of the step under way.
	InFlight  int    `json:"inFlight"`
	Probes    int    `json:"probes"`
	Released  int    `json:"released"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Note      string `json:"note,omitempty"`
	DoneAt    int64  `json:"doneAt,omitempty"`
	UpdatedAt int64  `json:"updatedAt"`
}

// DrainList is the body of GET /api/v1/drains: every drain by function,
// and the stored ones that do not validate.
type DrainList struct {
	Drains  []Drain         `json:"drains"`
	Invalid []InvalidRecord `json:"invalid"`
}
