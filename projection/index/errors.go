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
