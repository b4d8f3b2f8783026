// Package scheduler prepares the compensation of due ExecutionFailed
// records, as Wow's compensation scheduler does: every period (60 s by
// default, after an initial delay of 60 s) it takes up to a batch (100) of
// the records the projection index lists as due (projection.Index.Due:
// RECOVERABLE or UNKNOWN and aggregate.State.CanNextRetry, oldest
// nextRetryAt first) and sends PrepareCompensation for each through the
// aggregate's command service, as actor "scheduler", a bounded number at
// once. A pass that finds more due than a batch goes on, batch after
// batch at its rate (WithRate, DefaultRate), until nothing more is due, a
// batch prepares nothing new or a period has passed.
//
// # Contract
//
//   - One active instance: every instance runs a Scheduler; only the
//     holder of the lease in a KV bucket with a TTL (OpenLeases) prepares.
//     A dead holder is replaced within one TTL; a holder that cannot renew
//     stops a safety margin before its lease could expire.
//   - A rejection because the record moved on since the index saw it is
//     normal: counted, not logged as an error. A prepare that fails for
//     another reason is counted (Stats.Failed) and the record backs off
//     (WithFailureBackoff), so records it cannot prepare never keep the
//     ones behind them waiting. A due view of a record that does not
//     exist is counted (Stats.Missing) and handed to the projector
//     (WithReprojector).
//   - Parking until a deploy (WithParkRules): a pass leaves alone the due
//     records that an operator's park-until-deploy rule matches. With
//     WithParkRelease the holder releases them when their processor
//     registers a newer build, as a rollout (a canary, then growing steps,
//     halted below the threshold; ParkRelease per processor in KV).
//   - Recovery drains (WithDrains): while a function's circuit is not
//     closed its records are left alone and the drain chooses and
//     prepares the probe; when the circuit closes the drain prepares the
//     incident's records as a rollout (package circuit decides, this
//     package carries out; docs/circuits.md has the numbers). The drain
//     never opens the circuit.
//   - Retention (WithRetention): the holder runs a retention.Sweeper's
//     passes (package retention).
//   - Partitions (serve --partitions; docs/scaling.md): each instance
//     holds the leases of the partitions (package partition) that the
//     plan, computed by the holder of a coordinator lease from the live
//     members and the sizes they report, gives it; a partition is taken
//     only once no other instance holds a record of it. With
//     WithPartitions the passes prepare the due records of the
//     partitions this instance holds, on every instance, and a
//     processor's drains and releases run on the holder of its first
//     partition.
//   - Every command has a command id fixed by what it does (the record,
//     its retry count, the drain or release step), so a resend after a
//     crash of the holder appends once. Progress (drains, releases) is in
//     KV, written after each step, so a new holder continues where the
//     last stopped. A stored value that does not validate, or that the
//     policy cannot continue, is quarantined and halted, never acted on.
//
// # Time
//
// The pass time comes from an injected aggregate.Clock; ticks can be
// injected too (WithTicks), so tests drive passes deterministically. The
// lease's validity is measured with a clock that must follow the NATS
// servers' (WithLeaseClock, the system clock by default).
//
// # Errors and concurrency
//
// New and the options return errors wrapping ErrInvalidOption that name
// the setting. Run returns when its context ends (nil) or when it cannot
// start. Stats is safe to read at any time; a Scheduler is run once.
package scheduler
