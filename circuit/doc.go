// Package circuit keeps a circuit per function, so that amends stops
// calling a dependency that is down and calls it again, carefully, once
// it is back. docs/circuits.md is the manual: what counts as evidence, the
// states and their numbers, the recovery drain and the operator's part.
//
// A circuit guards one function, (context, processor, name): its Function,
// named CONTEXT.PROCESSOR.NAME. It is on by default for every function
// registered with a processor, with DefaultPolicy.
//
// # Contract
//
//   - A circuit judges the dependency, not the event. The Breaker counts
//     distinct events (retries, redeliveries and replays of one event in
//     the window are one observation), at most a quarter of
//     ConsecutiveFailures per aggregate, and only RECOVERABLE or UNKNOWN
//     failures; a replay of a record that failed for a real reason
//     (Call.Known) is evidence about that record, not the dependency. So
//     a share of events that always fail at or below FailureRatio never
//     opens a circuit (the ratio rule takes the lower end of a Wilson
//     interval at z = 4), while a dead dependency opens it within
//     ConsecutiveFailures distinct events.
//   - CLOSED calls the function; OPEN refuses every call (its failure is
//     recorded at once with errorCode ErrorCode, CircuitOpen) until the
//     cool-down passed; HALF_OPEN lets one probe at a time through across
//     the instances. Successes distinct probes close it; ProbeFailures
//     failed probes per success plus one open it again with twice the
//     cool-down, at most MaxCoolDown. An OPEN circuit an operator opened
//     (Forced) is never probed.
//   - A circuit changes only through Evolve, a pure function of its State,
//     the time, the policy and an Observation; a recovery drain only
//     through DecideDrain, Drain.Settled and Drain.Finished. The breaker,
//     the scheduler and the server read, call those and write back; none
//     decides on its own.
//   - A State keeps its Incident, from the first failure of the streak
//     that opened it to its close; the scheduler drains the incident's
//     records when it closes. A success after a streak of at least half of
//     ConsecutiveFailures failing distinct events (a Recovery) reports a
//     short outage that never opened the circuit; interleaved failures
//     (bad events) never report one.
//
// # Shared state and errors
//
// The circuits of all functions are in one KV bucket (DefaultBucket), a
// State per function; every change is a compare-and-set on the key's
// revision (Store.Update), so two instances never both make a transition.
// Instances watch the bucket (Set) and learn within milliseconds what
// another one changed; each counts its own calls. An instance that cannot
// write the bucket applies the change alone until the bucket answers
// again. Every value read is validated (DecodeState); one that does not
// validate is quarantined and ignored, so its function is called as if
// its circuit were closed. A refused call's error is an *OpenError.
//
// Everything here is safe for concurrent use; Evolve, DecideDrain and the
// Drain methods are pure.
package circuit
