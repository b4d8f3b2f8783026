package index

import (
	"errors"
	"fmt"
)

// Sentinels matched with errors.Is. Errors that wrap them name the value and
// the rule that was broken.
var (
	// ErrInvalidQuery: a filter, sort, limit or cursor that breaks a rule.
	// Its text is projection's, which re-exports it as
	// projection.ErrInvalidQuery.
	ErrInvalidQuery = errors.New("projection: invalid query")
	// ErrInvalidOption: an option value New cannot use.
	ErrInvalidOption = errors.New("projection/index: invalid option")
	// ErrInvalidSnapshot: bytes that are not a snapshot this package
	// wrote (a wrong magic or checksum, a count or string past its
	// bound, a number outside its table).
	ErrInvalidSnapshot = errors.New("projection/index: invalid snapshot")
	// ErrSnapshotVersion: a snapshot of another format version than
	// SnapshotVersion.
	ErrSnapshotVersion = errors.New("projection/index: snapshot of another format version")
	// ErrLoading: the index is being loaded in bulk and has no snapshot
	// to give yet.
	ErrLoading = errors.New("projection/index: the index is being loaded")
	// ErrNotEmpty: a snapshot is restored only by a load into an empty
	// index.
	ErrNotEmpty = errors.New("projection/index: a snapshot loads only into an empty index, within a load")
)

// QueryError is an invalid query: the field at fault and the rule it
// breaks. It matches ErrInvalidQuery with errors.Is.
type QueryError struct {
	// Field is the query's name of the value, e.g. "cursor", "limit".
	Field string
	// Reason says what is wrong, without the sentinel's text.
	Reason string
}

// Error returns the reason and the sentinel.
func (e *QueryError) Error() string { return e.Reason + ": " + ErrInvalidQuery.Error() }

// Is reports whether target is ErrInvalidQuery.
func (e *QueryError) Is(target error) bool { return target == ErrInvalidQuery }

func invalidQuery(field, format string, args ...any) error {
	return &QueryError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
