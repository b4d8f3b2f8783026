// Package recorder turns the final outcomes of functions into commands on
// ExecutionFailed records: it is the processor.FailureRecorder of amends,
// after the reference's CompensationFailureRecorder (Wow 9.3).
//
// # What Record does
//
//   - A first failure (no compensation) sends CreateExecutionFailed to the
//     record aggregate.RecordID(event id, function): outcome RECORDED, or
//     ALREADY_RECORDED when that record is already FAILED or PREPARED (a
//     redelivery). A SUCCEEDED record is re-opened.
//   - A failed replay sends ApplyExecutionFailed with the attempt and the
//     version of its prepare (processor.Compensation.Prepared); a
//     successful replay sends ApplyExecutionSuccess with both, even for a
//     function that opted out. Outcome APPLIED, or STALE_ATTEMPT when the
//     record rejects it because it moved on (another attempt, an attempt of
//     the same number prepared after a re-open, or no longer PREPARED): the
//     message is acked, since that attempt's result no longer matters.
//   - A failure without function identity is FAILURE_UNRECORDED; one of a
//     function NoCompensation is FAILURE_WAIVED. Neither sends.
//   - A send that fails is retried (by default 3 retries, backoff 1 s
//     doubling to at most 10 s, jitter 0.5); only the send is retried, never
//     the function. When every send fails the outcome is RECORDING_FAILED
//     and Record returns the execution's error (or, for a successful replay,
//     the send error) with the last send error attached once as a
//     cockroachdb/errors secondary error; it matches ErrRecordingFailed. The
//     processor then leaves the message for redelivery.
//
// Commands carry deterministic command ids for applies
// ("<command>:<record>:<attempt>@<prepare's version>"), so a send retried after a lost
// acknowledgement is deduplicated by the record. A create uses one fresh
// command id per Record call, reused by its retries: a re-delivery of an
// already recorded failure is recognised by the record's state instead
// (ALREADY_RECORDED), and a later failure after a SUCCEEDED replay can
// still re-open the record.
//
// # Error details and classification
//
// Details derives the record's ErrorDetails from a Go error: the code (an
// error's own Code() string, else a code registered with RegisterCode, else
// a built-in one, else GenericCode, "Unclassified"; the reference says
// "BadRequest" there, which blames the caller), the message, the
// stack trace when the error carries one (cockroachdb/errors) and binding
// errors from an error implementing Validation. Recoverability comes from
// failure.Classify with the function's rules.
//
// # Fingerprints and rules
//
// Every failure's ErrorDetails carries a fingerprint (package
// fingerprint): the function, the code, the normalised message and the
// first stack frame in the service's module (WithModule; by default the
// binary's main module). With WithRules, a new failure is matched in
// memory against the operators' rules (package rules) and the creation
// carries what the matching rule does: a classification, a retry spec, or
// both for a waive, with the rule's id in the header "rule" and its reason
// as the command's reason. A failed replay gets a fingerprint too; rules
// act on new failures only.
//
// A Recorder is safe for concurrent use. Its Metrics count every outcome.
package recorder
