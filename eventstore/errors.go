package eventstore

import (
	"errors"
	"fmt"
)

var (
	// ErrConflict reports that an append expected a version other than the
	// aggregate's current one. Nothing was written; reload and decide again.
	ErrConflict = errors.New("eventstore: version conflict")
	// ErrNotFound reports that an aggregate, version or sequence does not exist.
	ErrNotFound = errors.New("eventstore: not found")
	// ErrInvalid reports a stream, id or argument that breaks a rule of the
	// store. The wrapping message names the field and the rule.
	ErrInvalid = errors.New("eventstore: invalid")
	// ErrCorrupt reports a stored value the store cannot read as a stream it
	// wrote there: a document that does not decode, or one whose place in
	// the store (its aggregate, version or position) disagrees with where it
	// is stored. The wrapping message names the position (the stream
	// sequence) and what is wrong. Such a value can never be processed: a
	// reader skips or quarantines it, a subscriber terminates its message.
	ErrCorrupt = errors.New("eventstore: corrupt message")
	// ErrIncompatible reports storage that exists with settings the store
	// cannot use (for jsstore, a JetStream stream configured otherwise). A
	// store never reconfigures it; the wrapping message lists each
	// difference.
	ErrIncompatible = errors.New("eventstore: incompatible storage")
)

// ConflictError is the error an append returns when the aggregate moved on.
// It matches ErrConflict with errors.Is.
type ConflictError struct {
	// Aggregate is the aggregate the append targeted.
	Aggregate AggregateID
	// Expected is the version the writer expected the aggregate to be at.
	Expected uint64
	// Actual is the version found in the store, when the store knows it.
	Actual uint64
}

// Error implements error.
func (e *ConflictError) Error() string {
	if e.Actual == 0 && e.Expected > 0 {
		return fmt.Sprintf("append to %s expected version %d but the aggregate does not exist: %v", e.Aggregate, e.Expected, ErrConflict)
	}
	return fmt.Sprintf("append to %s expected version %d but it is at version %d: %v", e.Aggregate, e.Expected, e.Actual, ErrConflict)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// invalid returns an error matching ErrInvalid with a formatted reason.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalid)
}
