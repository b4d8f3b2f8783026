package projection

import (
	"errors"
	"fmt"
)

// Sentinels matched with errors.Is. Errors that wrap them name the value and
// the rule that was broken.
var (
	// ErrNotFound: the record has no view (it does not exist, or the
	// projector has not reached it yet).
	ErrNotFound = errors.New("projection: not found")
	// ErrInvalidOption: an option value a constructor cannot use.
	ErrInvalidOption = errors.New("projection: invalid option")
	// ErrInvalidQuery: a filter, sort, limit or cursor that breaks a rule.
	ErrInvalidQuery = errors.New("projection: invalid query")
	// ErrIncompatibleBucket: the views bucket exists with settings other
	// than the ones asked for. amends never reconfigures it.
	ErrIncompatibleBucket = errors.New("projection: incompatible bucket")
	// ErrCorruptView: a stored view that is not a view amends wrote.
	ErrCorruptView = errors.New("projection: corrupt view")
	// ErrNotCurrent: the index may not hold the bucket's latest views (not
	// loaded yet, or its watch is being restarted); see Index.Healthy.
	ErrNotCurrent = errors.New("projection: index not current")
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
