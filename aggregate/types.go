package aggregate

import (
	"fmt"
	"strings"

	"github.com/amends-dev/amends/eventstore"
)

// Status is the state of a record: FAILED, PREPARED or SUCCEEDED. The zero
// value means the record does not exist.
type Status string

// The statuses.
const (
	// StatusFailed: the last execution failed; waiting for a prepare.
	StatusFailed Status = "FAILED"
	// StatusPrepared: a replay is prepared; waiting for its result or timeout.
	StatusPrepared Status = "PREPARED"
	// StatusSucceeded: a replay succeeded.
	StatusSucceeded Status = "SUCCEEDED"
)

// Statuses lists every status in state-machine order.
var Statuses = []Status{StatusFailed, StatusPrepared, StatusSucceeded}

// Recoverability classifies a failure: RECOVERABLE, UNRECOVERABLE or
// UNKNOWN (Wow's RecoverableType).
type Recoverability string

// The classifications.
const (
	// Recoverable: retrying may succeed (e.g. a timeout).
	Recoverable Recoverability = "RECOVERABLE"
	// Unrecoverable: retrying will not help; the scheduler leaves the
	// record to operators.
	Unrecoverable Recoverability = "UNRECOVERABLE"
	// RecoverabilityUnknown: not classified; scheduled like RECOVERABLE.
	RecoverabilityUnknown Recoverability = "UNKNOWN"
)

// Recoverabilities lists every classification.
var Recoverabilities = []Recoverability{Recoverable, Unrecoverable, RecoverabilityUnknown}

// AutoRetried reports whether the scheduler retries records of this
// classification: RECOVERABLE and UNKNOWN are, UNRECOVERABLE is not.
func (r Recoverability) AutoRetried() bool { return r == Recoverable || r == RecoverabilityUnknown }

// FunctionKind is what kind of function failed.
type FunctionKind string

// The function kinds.
const (
	KindCommand    FunctionKind = "COMMAND"
	KindSourcing   FunctionKind = "SOURCING"
	KindEvent      FunctionKind = "EVENT"
	KindStateEvent FunctionKind = "STATE_EVENT"
	KindError      FunctionKind = "ERROR"
)

// FunctionKinds lists every function kind.
var FunctionKinds = []FunctionKind{KindCommand, KindSourcing, KindEvent, KindStateEvent, KindError}

// parseEnum matches s case-insensitively against values, as Wow's server
// reads enums. The error names the field and the allowed values, e.g.
// `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "x".`,
// and its Field is field.
func parseEnum[T ~string](field, s string, values []T) (T, error) {
	for _, v := range values {
		if strings.EqualFold(s, string(v)) {
			return v, nil
		}
	}
	return "", invalidField(field, fmt.Sprintf("%s must be %s, got %q.", field, oneOf(values), s))
}

// oneOf lists values as "A, B or C".
func oneOf[T ~string](values []T) string {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseStatus reads a status case-insensitively.
func ParseStatus(s string) (Status, error) { return parseEnum("status", s, Statuses) }

// ParseRecoverability reads a classification case-insensitively.
func ParseRecoverability(s string) (Recoverability, error) {
	return parseEnum("recoverable", s, Recoverabilities)
}

// ParseFunctionKind reads a function kind case-insensitively.
func ParseFunctionKind(s string) (FunctionKind, error) {
	return parseEnum("functionKind", s, FunctionKinds)
}

// UnmarshalText implements encoding.TextUnmarshaler (case-insensitive).
func (s *Status) UnmarshalText(b []byte) (err error) {
	*s, err = ParseStatus(string(b))
	return err
}

// UnmarshalText implements encoding.TextUnmarshaler (case-insensitive).
func (r *Recoverability) UnmarshalText(b []byte) (err error) {
	*r, err = ParseRecoverability(string(b))
	return err
}

// UnmarshalText implements encoding.TextUnmarshaler (case-insensitive).
func (k *FunctionKind) UnmarshalText(b []byte) (err error) {
	*k, err = ParseFunctionKind(string(b))
	return err
}

// DefaultTenantID is the tenant Wow gives every ExecutionFailed aggregate.
const DefaultTenantID = "(0)"

// WireAggregateID is an aggregate id in Wow's wire shape
// ({contextName, aggregateName, aggregateId, tenantId}), as records
// (EventID.AggregateID) and the projection's items (projection.Item's
// Aggregate) carry it in JSON.
//
// It names the same thing as eventstore.AggregateID, the id the event
// store and every Go API take, with other field names:
//
//	WireAggregateID            eventstore.AggregateID
//	ContextName                Context
//	AggregateName              Type
//	AggregateID                ID
//	TenantID (always "(0)")    -
//
// So the aggregate's own id is w.AggregateID, not w.ID. Convert with
// w.StoreID() and WireAggregateIDOf; don't copy the fields by hand.
type WireAggregateID struct {
	// ContextName is the aggregate's bounded context
	// (eventstore.AggregateID.Context).
	ContextName string `json:"contextName"`
	// AggregateName is the aggregate type (eventstore.AggregateID.Type).
	AggregateName string `json:"aggregateName"`
	// AggregateID is the aggregate's id (eventstore.AggregateID.ID).
	AggregateID string `json:"aggregateId"`
	// TenantID is kept for wire compatibility; amends writes DefaultTenantID.
	TenantID string `json:"tenantId"`
}

// WireAggregateIDOf returns a in Wow's wire shape, with DefaultTenantID.
func WireAggregateIDOf(a eventstore.AggregateID) WireAggregateID {
	return WireAggregateID{ContextName: a.Context, AggregateName: a.Type, AggregateID: a.ID, TenantID: DefaultTenantID}
}

// StoreID returns w as the event store names it. The tenant is dropped:
// amends keeps one tenant, DefaultTenantID.
func (w WireAggregateID) StoreID() eventstore.AggregateID {
	return eventstore.AggregateID{Context: w.ContextName, Type: w.AggregateName, ID: w.AggregateID}
}

// EventID identifies the failed event: its id, its aggregate and the
// aggregate version of the stream that holds it, plus (beyond Wow) the
// store sequence of that stream so a replay fetches it with one read.
type EventID struct {
	// ID is the failed event's id.
	ID string `json:"id"`
	// AggregateID is the aggregate the event belongs to, in Wow's shape:
	// its id is AggregateID.AggregateID; AggregateID.StoreID() is the
	// eventstore.AggregateID.
	AggregateID WireAggregateID `json:"aggregateId"`
	// Version is the aggregate version of the event's stream.
	Version uint64 `json:"version"`
	// Seq is the store sequence of the event's stream; 0 if unknown.
	Seq uint64 `json:"seq,omitempty"`
}

// FunctionInfo identifies the function that failed. Context, processor and
// name select it on replay; the kind says how to replay.
type FunctionInfo struct {
	// FunctionKind is EVENT for processors, sagas and projections,
	// STATE_EVENT for snapshot functions.
	FunctionKind FunctionKind `json:"functionKind"`
	// ContextName is the bounded context (service) that owns the function.
	ContextName string `json:"contextName"`
	// ProcessorName is the processor (durable consumer) the function is in.
	ProcessorName string `json:"processorName"`
	// Name is the function's name within the processor.
	Name string `json:"name"`
}

// SameFunction reports whether f and g are the same function, kind included
// (Wow's isSameFunction).
func (f FunctionInfo) SameFunction(g FunctionInfo) bool { return f == g }

// String renders f as Wow's data-class toString, which the reference error
// messages quote.
func (f FunctionInfo) String() string {
	return fmt.Sprintf("FunctionInfoData(functionKind=%s, contextName=%s, processorName=%s, name=%s)",
		f.FunctionKind, f.ContextName, f.ProcessorName, f.Name)
}

// BindingError is one invalid field of a failed validation.
type BindingError struct {
	Name string `json:"name"`
	Msg  string `json:"msg"`
}

// ErrorDetails describes a failure.
type ErrorDetails struct {
	// ErrorCode is a stable code, e.g. "IllegalState" or "Timeout".
	ErrorCode string `json:"errorCode"`
	// ErrorMsg is the error's message.
	ErrorMsg string `json:"errorMsg"`
	// StackTrace is the stack where the error was created, if known.
	StackTrace string `json:"stackTrace"`
	// BindingErrors are the invalid fields of a validation error.
	BindingErrors []BindingError `json:"bindingErrors,omitempty"`
	// Fingerprint (beyond Wow) groups failures that are the same problem:
	// a hash of the function, the code, the normalised message and the
	// first stack frame in the service's module (see package fingerprint).
	// Empty when the recorder computed none; absent from the JSON then.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Succeeded reports whether the code is "Ok" (Wow's ErrorInfo.succeeded).
func (e ErrorDetails) Succeeded() bool { return e.ErrorCode == "Ok" }

// RetrySpec is a record's retry policy. All values are 32-bit, as in Wow.
type RetrySpec struct {
	// MaxRetries is how many scheduled prepares a record gets.
	MaxRetries int32 `json:"maxRetries"`
	// MinBackoff is the first backoff in seconds; it doubles with each retry.
	MinBackoff int32 `json:"minBackoff"`
	// ExecutionTimeout is how long a prepared replay may run, in seconds.
	ExecutionTimeout int32 `json:"executionTimeout"`
	// MaxBackoff (beyond Wow) caps one interval, in seconds; 0, absent from
	// the JSON, means no cap (Wow's formula).
	MaxBackoff int32 `json:"maxBackoff,omitempty"`
	// Jitter (beyond Wow) is the largest fraction, from 0 to 1, taken off
	// an interval, drawn from the record id and attempt (NextRetryAtOf);
	// 0, absent from the JSON, means none.
	Jitter float64 `json:"jitter,omitempty"`
}

// DefaultRetrySpec is Wow's default: 10 retries, 180 s backoff, 120 s timeout.
var DefaultRetrySpec = RetrySpec{MaxRetries: 10, MinBackoff: 180, ExecutionTimeout: 120}

// RetryState is where a record is in its retries. Times are epoch ms.
type RetryState struct {
	// Retries counts prepares; the current attempt number.
	Retries int32 `json:"retries"`
	// RetryAt is when the current attempt was prepared (or the record created).
	RetryAt int64 `json:"retryAt"`
	// TimeoutAt is when the current attempt times out.
	TimeoutAt int64 `json:"timeoutAt"`
	// NextRetryAt is when the scheduler may prepare the next attempt.
	NextRetryAt int64 `json:"nextRetryAt"`
}
