package projection

import (
	"fmt"
	"slices"
)

// SortField is what List orders by.
type SortField string

// The sort fields.
const (
	// SortExecuteAt orders by the time of the last outcome.
	SortExecuteAt SortField = "executeAt"
	// SortNextRetryAt orders by when the record is next due.
	SortNextRetryAt SortField = "nextRetryAt"
	// SortRetries orders by the retry count.
	SortRetries SortField = "retries"
)

// SortFields lists the sort fields.
var SortFields = []SortField{SortExecuteAt, SortNextRetryAt, SortRetries}

// Sort is List's order. Records with equal keys are in a fixed order that
// every index shares. The zero Sort is executeAt ascending.
type Sort struct {
	// Field is the key; "" means SortExecuteAt.
	Field SortField `json:"field,omitempty"`
	// Desc orders from the largest key down.
	Desc bool `json:"desc,omitempty"`
}

// sortField is a SortField's position in SortFields and in Index.orders.
type sortField int

const numSortFields = 3

func (s Sort) field() (sortField, error) {
	if s.Field == "" {
		return 0, nil
	}
	i := slices.Index(SortFields, s.Field)
	if i < 0 {
		return 0, fmt.Errorf("sort field must be one of %v, got %q: %w", SortFields, s.Field, ErrInvalidQuery)
	}
	return sortField(i), nil
}

// key is e's sort key in order f.
func (f sortField) key(e *entry) int64 {
	switch f {
	case 1:
		return e.nextRetryAt
	case 2:
		return int64(e.retries)
	default:
		return e.executeAt
	}
}
