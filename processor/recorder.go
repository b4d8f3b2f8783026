package processor

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
)

// FailureRecorder records the final outcome of a function's execution
// (after the whole function chain, immediate retries included):
// recorder.Recorder implements it on the ExecutionFailed aggregate.
//
// The processor calls Record for every execution that failed and for every
// replay, successful or not; never for a normal delivery that succeeded.
// Record returns an error only with OutcomeRecordingFailed: the execution's
// error (or, for a successful replay, the send error) with the last send
// error attached. The processor then leaves the message un-acked and asks
// for its redelivery. Every other outcome is acked.
//
// Record must be safe for concurrent use.
type FailureRecorder interface {
	Record(ctx context.Context, x Execution) (Outcome, error)
}

// Execution is one function's final outcome for one event.
type Execution struct {
	// EventID identifies the event, its aggregate, version and stream
	// sequence.
	EventID aggregate.EventID
	// Function is the function's identity; nil when unknown (the outcome is
	// then FAILURE_UNRECORDED).
	Function *aggregate.FunctionInfo
	// Compensation is the replay this execution ran for; nil for a normal
	// delivery.
	Compensation *Compensation
	// Err is the function's error after immediate retries; nil on success.
	Err error
	// ExecuteAt is when the execution finished.
	ExecuteAt time.Time
	// StartedAt is when the function was first called for it (immediate
	// retries included); zero if it was not called or is unknown.
	StartedAt time.Time
	// Instance and Build identify the processor instance that ran it
	// (Processor.Instance, the registry's build); the processor fills them
	// in.
	Instance, Build string
	// RetrySpec is the function's retry spec; nil means the compensation
	// service's default.
	RetrySpec *aggregate.RetrySpec
	// Waived reports that the function opted out (NoCompensation).
	Waived bool
	// Rules are the function's classification rules.
	Rules failure.Rules
	// Prior is, for a replay the circuit refused of a record whose last
	// call failed for a real reason, that failure: the record keeps it
	// (errorCode, fingerprint, classification), since the replay says
	// nothing new of the record, and the refusal is told in its message.
	// Nil otherwise.
	Prior *PriorFailure
	// Recoverable is Err's classification by Rules, made once by the
	// processor when the function failed (the circuit weighed the failure
	// by it); empty when the processor did not classify it (a refusal by
	// the circuit, a failure the processor made itself). A recorder uses
	// it rather than classifying again.
	Recoverable aggregate.Recoverability

	call trace.SpanContext // the span of the call that produced it (trace.go)
}

// PriorFailure is a record's last real failure (Execution.Prior).
type PriorFailure struct {
	Error       aggregate.ErrorDetails
	Recoverable aggregate.Recoverability
}

// Outcome is what recording an execution did. Each is counted by the
// recorder; only OutcomeRecordingFailed leaves the message un-acked.
type Outcome string

// The outcomes.
const (
	// OutcomeNone: nothing to record (a normal delivery that succeeded).
	OutcomeNone Outcome = "NONE"
	// OutcomeRecorded: CreateExecutionFailed created (or re-opened) the
	// record of a first failure.
	OutcomeRecorded Outcome = "RECORDED"
	// OutcomeAlreadyRecorded: the record of this (event, function) is
	// already FAILED or PREPARED, e.g. after a redelivery; nothing changed.
	OutcomeAlreadyRecorded Outcome = "ALREADY_RECORDED"
	// OutcomeApplied: a replay's result was written back
	// (ApplyExecutionSuccess or ApplyExecutionFailed).
	OutcomeApplied Outcome = "APPLIED"
	// OutcomeStale: a replay's result was rejected because the record moved
	// on (another attempt was prepared, or it is no longer PREPARED).
	OutcomeStale Outcome = "STALE_ATTEMPT"
	// OutcomeUnrecorded: the failure had no function identity.
	OutcomeUnrecorded Outcome = "FAILURE_UNRECORDED"
	// OutcomeWaived: the function opted out of compensation.
	OutcomeWaived Outcome = "FAILURE_WAIVED"
	// OutcomeRecordingFailed: the command could not be sent after every
	// retry; the message is redelivered.
	OutcomeRecordingFailed Outcome = "RECORDING_FAILED"
)

// Outcomes lists every outcome.
var Outcomes = []Outcome{OutcomeNone, OutcomeRecorded, OutcomeAlreadyRecorded, OutcomeApplied,
	OutcomeStale, OutcomeUnrecorded, OutcomeWaived, OutcomeRecordingFailed}

// Records reads ExecutionFailed records; *aggregate.Service satisfies it.
// With it (WithRecords) the replay consumer skips prepared events whose
// record has moved on instead of running the function for nothing.
type Records interface {
	Get(ctx context.Context, id string) (aggregate.State, uint64, error)
}
