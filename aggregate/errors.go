package aggregate

import "errors"

// Sentinels matched with errors.Is. The *Error that Decide returns wraps
// exactly one of them and carries the reference message.
var (
	// ErrIllegalState: the record's state does not allow the command (Wow's
	// IllegalStateException, error code "IllegalState").
	ErrIllegalState = errors.New("IllegalState")
	// ErrIllegalArgument: a command field breaks a rule (Wow's
	// IllegalArgumentException, error code "IllegalArgument").
	ErrIllegalArgument = errors.New("IllegalArgument")
	// ErrArithmetic: the retry math overflows 64-bit milliseconds (Wow's
	// ArithmeticException, error code "BadRequest").
	ErrArithmetic = errors.New("BadRequest")
	// ErrNotFound: the record does not exist.
	ErrNotFound = errors.New("NotFound")
	// ErrAlreadyRecorded: Create on a record that is FAILED or PREPARED. The
	// failure is already recorded; nothing changed.
	ErrAlreadyRecorded = errors.New("AlreadyRecorded")
	// ErrStaleAttempt: an execution result for an attempt that is no longer
	// the current one.
	ErrStaleAttempt = errors.New("StaleAttempt")
)

// Error is a rejected command: a kind (one of the sentinels) and the
// message an operator sees.
type Error struct {
	// Kind is the sentinel the error matches.
	Kind error
	// Message is the reference message, e.g. "ExecutionFailed can not retry.".
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Code is the error code of the kind: "IllegalState", "IllegalArgument",
// "BadRequest", "NotFound", "AlreadyRecorded" or "StaleAttempt".
func (e *Error) Code() string { return e.Kind.Error() }

func illegalState(msg string) error    { return &Error{Kind: ErrIllegalState, Message: msg} }
func illegalArgument(msg string) error { return &Error{Kind: ErrIllegalArgument, Message: msg} }
func arithmetic(msg string) error      { return &Error{Kind: ErrArithmetic, Message: msg} }
