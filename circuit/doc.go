// Package circuit keeps a circuit per function, so that amends stops
// calling a dependency that is down and calls it again, carefully, once
// it is back.
//
// A circuit guards one function, (context, processor, name): its
// Function, named CONTEXT.PROCESSOR.NAME. It is on by default for every
// function registered with a processor, with the conservative thresholds
// of DefaultPolicy; processor.WithCircuit sets another Policy per
// function, or turns it off.
//
// # Evidence
//
// A circuit judges the dependency, not the event. Most failures are about
// their event (one customer's invalid address, one malformed order), and
// such events fail every time they are called; a dead dependency makes
// every event fail. The breaker therefore counts distinct events, and
// only what is news about the dependency (Call):
//
//   - One event is one observation in a window: its immediate retries,
//     its redeliveries and its replays while it is in the window add
//     nothing (the failed events of the last Window are remembered, at
//     most 8 192). An execution's failure with a retry to come is pending
//     (Outcome.Pending): it counts towards the streak, so that a dead
//     dependency opens the circuit on first calls rather than after every
//     retry, but not towards the ratio, which weighs executions that
//     ended; a retry that succeeds is a success like any other.
//   - A replay of a record whose last call failed for a real reason
//     (Call.Known) is evidence about that record: its failure is not
//     counted (it failed before; failing again says nothing new), its
//     success is; refused while the circuit is not closed, its record keeps
//     its own failure (package recorder). A replay of a record the circuit
//     refused is a fresh call, like a live event: that event was never
//     tried.
//   - One aggregate adds at most a quarter of ConsecutiveFailures (5 by
//     default) to a streak and to a window, so that a few bad aggregates
//     never open the circuit.
//   - An UNRECOVERABLE failure is about its event and is not counted.
//   - The streak rule (ConsecutiveFailures distinct events in a row, 20)
//     opens it on a dead dependency within 20 distinct events. Events that
//     fail for their own reason at a share r make such a run once in
//     about r^-20 events: at 50 % once in a million, at 30 % once in 10^10.
//   - The ratio rule opens it when the share of failed distinct events in
//     the Window is above FailureRatio (one half) with confidence: the
//     lower end of its Wilson interval at z = 4. A share of bad events at
//     or below FailureRatio then never opens it, however few or many
//     events the window holds, while a dependency failing most calls does
//     (19 of 20, 71 of 100, 564 of 1 000).
//
// A wrong trip is also cheap to leave: a half-open circuit needs
// ProbeFailures (5) failed probes per success plus one to open again, so
// live probes that happen to be bad events do not keep it open.
//
// Fingerprints are no evidence either way: a dead dependency's failures
// share one fingerprint just as one kind of bad event's do.
//
// # States
//
//   - CLOSED: the function is called. Each instance weighs its calls
//     (Breaker, above): when a rule of the Policy is met, the circuit
//     opens.
//   - OPEN: the function is not called. Each live event, and each replay,
//     gets its failure recorded at once, with errorCode CircuitOpen
//     (ErrorCode), as a refusal of its own (package recorder says how),
//     and the function's retry spec: an ordinary ExecutionFailed record,
//     so an Ordered function holds the aggregate's later events as after
//     any failure. After the cool-down (CoolDown at first) the next call
//     that may probe (a live event, or the replay of a refused record) is
//     the probe; the scheduler chooses a refused record's replay as the
//     probe when no call comes (State.ProbeOf), or half-opens the circuit
//     when it has none (an IdleTick), so that an idle circuit is never
//     left open with its probe time past.
//   - HALF_OPEN: one probe at a time, across the instances (a claim in
//     the bucket), the other calls still refused. Successful probes of
//     Successes distinct events close the circuit; ProbeFailures failed
//     probes per success plus one open it again with twice the cool-down,
//     at most MaxCoolDown.
//
// An operator opens or closes a circuit (amends circuits open|close
// FUNCTION --reason): an OPEN circuit an operator opened (Forced) is
// never probed; it stays open until an operator closes it.
//
// # Shared state
//
// The circuits of all functions are in one KV bucket (DefaultBucket), a
// State per function, shared by the instances of each processor: every
// change is a compare-and-set on the key's revision (Store.Update), so
// two instances never both make a transition, and each transition is kept
// in the State (the last MaxTransitions, with the numbers that caused it,
// the instance or the operator) and logged by the instance that made it.
// Instances watch the bucket (Set) and learn within milliseconds what
// another one changed. The counts that decide a trip are each instance's
// own. An instance that cannot write the bucket applies the change alone
// until the bucket answers again.
//
// Every value read from the bucket is validated (DecodeState) field by
// field; one that does not validate is quarantined and ignored, so its
// function is called as if its circuit were closed: a bad entry never
// stops a function, nor panics a reader.
//
// # Incidents and the recovery drain
//
// An incident is decided here and carried out elsewhere. A circuit
// changes only through Evolve, a pure function of its State, the time,
// the policy and an Observation (a Trip, a Claim, a probe's ProbeSuccess,
// ProbeSilence or ProbeFailure, an IdleTick, an OperatorSet, a Recovery,
// Refusals); its recovery drain (a Drain, stored in the drains bucket,
// Drains) only through DecideDrain, Drain.Settled and Drain.Finished, and
// the scheduler probes when Drain.ProbeDue says so. The breaker, the
// scheduler and the server read, call those and write back; none decides
// on its own. The drain's steps are a rollout (package rollout, the
// Adaptive policy).
//
// A State keeps its Incident: from the first failure of the streak that
// opened it to when it closed. The scheduler drains the incident's
// records when it closes (package scheduler, WithDrains): those with
// errorCode CircuitOpen first, then those that failed within the
// incident, without waiting out their backoff, a canary first, then steps
// that double while the refused records among them succeed; the drain
// never opens the circuit. A call that succeeds after a streak of at least
// half of ConsecutiveFailures distinct events failing, while the circuit
// is closed, reports such an incident too (a Recovery), so records
// of an outage too short to open the circuit are drained as well; failures
// that successes interleave (bad events) never report one, so their
// records are never drained again and again.
//
// Everything here is safe for concurrent use; Evolve, DecideDrain and the
// Drain methods are pure.
package circuit
