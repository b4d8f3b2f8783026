package projection

import (
	"fmt"
	"slices"

	"github.com/amends-dev/amends/api"
)

// SortField is what List orders by (the API's type).
type SortField = api.SortField

// The sort fields.
const (
	SortExecuteAt   = api.SortExecuteAt
	SortNextRetryAt = api.SortNextRetryAt
	SortRetries     = api.SortRetries
)

// SortFields lists the sort fields.
var SortFields = api.SortFields

// Sort is List's order (the API's type). The zero Sort is executeAt
// ascending.
type Sort = api.Sort

// sortField is a SortField's position in SortFields and in Index.orders.
type sortField int

const numSortFields = 3

func fieldOf(s Sort) (sortField, error) {
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
