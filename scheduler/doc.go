// Package scheduler prepares the compensation of due ExecutionFailed
// records, as Wow's compensation scheduler does: every period (60 s by
// default, after an initial delay of 60 s) it takes up to a batch (100) of
// the records the projection index lists as due (projection.Index.Due:
// RECOVERABLE or UNKNOWN and aggregate.State.CanNextRetry, oldest
// nextRetryAt first) and sends PrepareCompensation for each through the
// aggregate's command service, as actor "scheduler", a bounded number at
// once. A rejection because the record moved on since the index saw it is
// normal: it is counted, not logged as an error. Beyond Wow, a pass that
// finds more due than a batch goes on, batch after batch at its rate
// (WithRate, DefaultRate: 200 records a second), until nothing more is due,
// a batch prepares nothing new or a period has passed: the scheduler keeps
// up with what comes due, and spreads a large backlog's replays instead of
// firing them back to back.
//
// A prepare that fails for another reason (the record's state cannot be
// loaded, the store is unreachable) is counted (Stats.Failed, the metric
// amends_scheduler_prepares_total{result="failed"}) and the record backs
// off: passes skip it for a time that doubles with each failure, capped
// (WithFailureBackoff), on the pass clock, and ask the index for one more
// record per record backing off, so records it cannot prepare never keep
// the ones behind them from being prepared. Their WARN lines are limited to
// a few a minute.
//
// A due record the index lists but that does not exist (a view written by
// something else) is counted (Stats.Missing), backs off, and is handed to
// the projector (WithReprojector), which deletes its view: such views
// never take a pass's batch. A stored release that does not validate, or
// that the policy cannot continue, is halted rather than acted on.
//
// # One active instance
//
// Every instance runs a Scheduler; only the holder of a lease in a KV
// bucket with a TTL (OpenLeases) prepares. The holder creates the key
// (Create), renews it every third of the TTL with a compare-and-set on its
// revision (Update), and deletes it when it stops. The others watch the
// key and create it as soon as it is deleted or expires, so a dead holder
// is replaced within one TTL. A holder that cannot renew stops preparing a
// safety margin before the lease could expire, counted from when it sent
// its last successful renewal: the server wrote the lease later than that,
// so it expires later.
//
// # Time
//
// The pass time comes from an injected aggregate.Clock; ticks can be
// injected too (WithTicks), so tests drive passes deterministically. The
// lease's validity is measured with a clock that must follow the NATS
// servers' (WithLeaseClock, the system clock by default).
//
// # Parking until a deploy, and park releases
//
// With WithParkRules, a pass parks (leaves alone) the due records that an
// operator's park-until-deploy rule (action HOLD_UNTIL_DEPLOY, package
// rules) matches. Parking is not the processor's ordering holds. With
// WithParkRelease the
// holder also watches the build registry (processor.BuildRegistry): when a
// processor registers a newer build than the one recorded, it releases the
// parked records of that processor that failed before the build appeared, a
// canary first, then steps (1, 5, 20, then all by default), each only
// while the success ratio of the one before is at least the threshold.
// Progress is a ParkRelease per processor in a KV bucket (OpenParkReleases),
// written after every step, so a restarted or new holder continues where
// the last one stopped. A canary or step below the threshold halts the
// release: the failed records are marked UNRECOVERABLE with the reason
// (their history says why), the halt is logged, counted
// (Stats.ParkReleases.Halted, amends_scheduler_releases_total{event="halted"}),
// kept in the bucket (Phase "halted", Halt) for a notifier to watch
// (ParkReleases.Watch) and handed to the optional onHalt hook.
//
// # Circuits and recovery drains
//
// With WithDrains the scheduler follows the functions' circuits (package
// circuit). While a function's circuit is not closed its records are left
// alone by the passes (they would only be refused) and its drain waits
// (phase "waiting"); if no live event claims the probe within a grace
// after the cool-down, the drain chooses a record to probe with, claims
// the probe for it in the circuits' bucket (so that its replay is the
// probe, circuit.State.ProbeOf) and prepares it, one at a time: the
// oldest record the circuit refused (its event was never tried, so it
// fails only if the dependency does), or, when the incident left none,
// its record due for a retry that failed last; never a record's failure
// from before the incident. With no record at all it half-opens the
// circuit (circuit.State.Idle), so that the next call probes.
//
// When the circuit closes (after its probes, or an operator), or a call
// reports that the function recovered from a streak of failures too short
// to open it, the drain prepares the records the incident left, without
// waiting out
// their backoff: first those the circuit refused (errorCode CircuitOpen),
// whatever their retries and class (a refusal is not an attempt: one whose
// retries ran out is force-prepared), then those retried automatically
// whose last failure is within the incident, those whose retries ran out
// during it included, oldest first. It is a
// rollout, as the deploy release is (rollout.go): a canary (1 record by
// default), then steps that double while at least half of the last one's
// refused records succeeded (DefaultDrainThreshold says why half), each no larger than a second's worth at the
// drain's rate (DefaultDrainRate per function) nor than the room in the
// replay consumer (DrainConfig.Capacity), and started no sooner than its
// size at that rate after the last. A step is judged by its refused
// records alone: the others failed before for a real reason and may fail
// again for it, following their own retry spec. A step below the
// threshold halves the step and the rate; a canary below it waits a
// cool-down and tries the next record. The drain never opens the circuit:
// the replays of refused records are fresh calls, which the circuit
// weighs itself. While a drain waits or drains the passes leave the
// function's records alone; once none is left it is done, and the passes
// take the records that failed since.
//
// Each prepare is PrepareCompensation (ForcePrepareCompensation for a
// refused record out of retries), as actor "scheduler" with a reason
// naming the drain and a command id fixed by the record, its retry count
// and the drain, so a resend (after a crash of the holder) appends once.
// The progress is a circuit.Drain per function in a KV bucket (circuit.OpenDrains),
// written after each step, so that a new holder continues where the last
// stopped; amends drains list shows it.
//
// # Retention
//
// With WithRetention the holder also runs a Sweeper (sweeper.go): it
// removes SUCCEEDED records, and optionally FAILED UNRECOVERABLE ones, past
// their retention from the compensation stream (jsstore.Store.Remove), the
// views bucket (projection.RetireView) and so the index, a batch at a
// time, oldest first. A batch is archived first (package archive), then
// recorded in the retention bucket (OpenRetention), counted in the tallies
// per function, error code and fingerprint, and only then removed; a
// sweeper that stops at any point finishes the batch on its next pass,
// and each record is counted once. Sweeper.Sweep runs one pass and
// SweepAll the whole backlog, for tools and benchmarks.
// docs/retention.md has the details.
package scheduler
