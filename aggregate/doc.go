// Package aggregate is the ExecutionFailed aggregate: the durable record of
// a function that failed to handle a committed event, and the state machine
// that governs its compensation (recovering the execution by replaying the
// original event to that function alone; never a rollback).
//
// # The domain core
//
// State, the eight Commands, the seven Events, Decide, Evolve, the retry
// math (NextRetryAt, NextRetryState, ValidateRetrySpec) and the predicates
// (IsBelowRetryThreshold, IsRetryable, Timeout, CanForceRetry, CanRetry,
// CanNextRetry, Schedulable and the operator views) are pure: they do no
// I/O, read no clock and draw no randomness. Time arrives as an argument.
// They reproduce the Wow framework's compensation module: the same guards,
// error messages, retry formula and JSON shapes (see testdata/wire).
//
// Beyond Wow:
//   - RecordID derives a record's id from the failed event and the function,
//     so recording the same failure twice finds one record: Create on a
//     FAILED or PREPARED record fails with ErrAlreadyRecorded, Create on a
//     SUCCEEDED record re-opens it.
//   - Fencing: every prepare increments retries, and that number is the
//     attempt. ApplyExecutionSuccess and ApplyExecutionFailed may carry it;
//     a result for any other attempt fails with ErrStaleAttempt, so a slow
//     attempt that timed out cannot overwrite a newer one. They may also
//     carry the version of the prepare (preparedVersion), which the state
//     keeps (PreparedVersion, set by EvolveAt): a result whose prepared
//     version is not the current attempt's fails with ErrStaleAttempt too,
//     so a result from before a SUCCEEDED record was re-opened (whose
//     attempts number from 1 again) cannot settle the new attempt. A
//     result without them keeps Wow's rule (the record is PREPARED).
//   - Attempt runs: CreateExecutionFailed, ApplyExecutionSuccess and
//     ApplyExecutionFailed may carry a Run (start time, instance, build,
//     trace id), kept in their events under an optional "run" object.
//     Timeline derives a record's attempts from its history, with a
//     final-failure entry where an open record has no automatic retry left
//     (FinalFailure). The final failure is derived, not a new event: the
//     events stay Wow's seven, and a later retry spec or reclassification
//     that gives a retry back cannot contradict a stored fact.
//
// # Errors
//
// Decide's errors are *Error values. Each matches one sentinel with
// errors.Is (ErrIllegalState, ErrIllegalArgument, ErrArithmetic,
// ErrNotFound, ErrAlreadyRecorded, ErrStaleAttempt) and its Error() is the
// reference message, e.g. "ExecutionFailed can not retry.". A refusal on
// an existing record also says why: Details gives the status, retries and
// limit, timeoutAt, recoverability and the replay commands that Decide
// accepts instead (found by asking Decide, not by a copy of its guards).
// Errors about a command field (from DecodeCommand, DecodeEvent or Decide)
// carry its JSON path, which ErrorField returns; no message shows Go types.
//
// # Service
//
// Service runs a command against the event store: it loads the record's
// state carried by its last stream (one read, whatever the history's
// length), decides with an injected clock, appends with optimistic
// concurrency and retries on conflict. It reaches the store only through
// the small Store interface, so this package imports no NATS code.
package aggregate
