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
// # States
//
//   - CLOSED: the function is called. Each instance counts its calls
//     (Breaker): when the last Policy.ConsecutiveFailures failed, or at
//     least MinCalls were made in the last Window and FailureRatio of
//     them failed, the circuit opens. Only failures the function's
//     classification calls RECOVERABLE or UNKNOWN count.
//   - OPEN: the function is not called. Each live event, and each replay,
//     gets its failure recorded at once, with errorCode CircuitOpen
//     (ErrorCode), the last real failure's message and fingerprint, and
//     the function's retry spec: an ordinary ExecutionFailed record, so
//     an Ordered function holds the aggregate's later events as after any
//     failure. After the cool-down (CoolDown at first) the next call (a
//     live event, or the replay the scheduler prepares for it) is the
//     probe.
//   - HALF_OPEN: one probe at a time, across the instances (a claim in
//     the bucket), the other calls still refused. Successes probes in a
//     row close the circuit; a failed probe opens it again with twice the
//     cool-down, at most MaxCoolDown.
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
// A State keeps its Incident: from the first failure of the streak that
// opened it to when it closed. The scheduler drains the incident's
// records when it closes (package scheduler, WithDrains): those with
// errorCode CircuitOpen or that failed within the incident, without
// waiting out their backoff, a canary first, then steps that double
// while they succeed. A replay that succeeds after failures the instance
// saw, while the circuit is closed, reports such an incident too
// (State.Recovered), so records of an outage too short or too sparse to
// open the circuit are drained as well.
//
// Everything here is safe for concurrent use; the State transitions
// (Tripped, Claimed, ProbeSucceeded, ProbeFailed, ByOperator, Recovered)
// are pure functions of the state, the time and the policy.
package circuit
