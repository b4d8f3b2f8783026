package api

import (
	"net/url"
	"strconv"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/bounds"
)

// Page limits of a list.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Query is a list request: GET /api/v1/records with a filter, an order, a
// page size and a cursor.
type Query struct {
	Filter Filter `json:"filter"`
	Sort   Sort   `json:"sort"`
	// Limit is the page size: 0 means DefaultLimit; at most MaxLimit.
	Limit int `json:"limit,omitempty"`
	// Cursor continues after the page that returned it (Page.Next); ""
	// starts at the beginning.
	Cursor string `json:"cursor,omitempty"`
}

// MinIDPrefix is the shortest id prefix Filter.IDPrefix takes: shorter
// ones would select too many records to name one.
const MinIDPrefix = 4

// Filter selects records. Every field that is set must match (AND); the
// zero Filter selects every record. String fields match exactly.
type Filter struct {
	// ID is the record id.
	ID string `json:"id,omitempty"`
	// IDPrefix selects the records whose id begins with it (at least
	// MinIDPrefix characters): a short id, as `amends show 3f9c` takes
	// one.
	IDPrefix string `json:"idPrefix,omitempty"`
	// EventID is the id of the event whose handling failed.
	EventID string `json:"eventId,omitempty"`
	// AggregateContext, AggregateType and AggregateID identify the
	// aggregate of that event.
	AggregateContext string `json:"aggregateContext,omitempty"`
	AggregateType    string `json:"aggregateType,omitempty"`
	AggregateID      string `json:"aggregateId,omitempty"`
	// FunctionContext, Processor, Function and FunctionKind identify the
	// function that failed.
	FunctionContext string                 `json:"functionContext,omitempty"`
	Processor       string                 `json:"processor,omitempty"`
	Function        string                 `json:"function,omitempty"`
	FunctionKind    aggregate.FunctionKind `json:"functionKind,omitempty"`
	// Status and Recoverable match the record's.
	Status      aggregate.Status         `json:"status,omitempty"`
	Recoverable aggregate.Recoverability `json:"recoverable,omitempty"`
	// ErrorCode is the last failure's code.
	ErrorCode string `json:"errorCode,omitempty"`
	// Fingerprint is the last failure's fingerprint
	// (aggregate.ErrorDetails.Fingerprint).
	Fingerprint string `json:"fingerprint,omitempty"`
	// ExecuteAtFrom and ExecuteAtTo bound executeAt: from inclusive, to
	// exclusive; zero is unbounded. They are compared in milliseconds.
	ExecuteAtFrom time.Time `json:"executeAtFrom,omitzero"`
	ExecuteAtTo   time.Time `json:"executeAtTo,omitzero"`
	// NextRetryAtFrom and NextRetryAtTo bound the retry state's nextRetryAt
	// (when the record is or was next due) the same way.
	NextRetryAtFrom time.Time `json:"nextRetryAtFrom,omitzero"`
	NextRetryAtTo   time.Time `json:"nextRetryAtTo,omitzero"`
	// MinRetries selects records with retries >= MinRetries.
	MinRetries int32 `json:"minRetries,omitempty"`
	// View selects one of the operator views (aggregate.View.Contains).
	View aggregate.View `json:"view,omitempty"`
	// Now is the time View is evaluated at; zero means the index's clock.
	// Only a batch's filter carries it: lists, counts and summaries are
	// evaluated at the server's clock, and Values leaves it out.
	Now time.Time `json:"now,omitzero"`
}

// SortField is what a list orders by.
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

// Sort is a list's order. Records with equal keys are in a fixed order
// that every index shares. The zero Sort is executeAt ascending.
type Sort struct {
	// Field is the key; "" means SortExecuteAt.
	Field SortField `json:"field,omitempty"`
	// Desc orders from the largest key down.
	Desc bool `json:"desc,omitempty"`
}

// Values returns f as the query parameters of GET /api/v1/records, count
// and summary (processor=Mailer&status=FAILED&view=to-retry): each field
// that is set, under its JSON name; times as RFC 3339 in UTC (epoch
// milliseconds outside the years 0 to 9999). Now is not a query parameter
// and is left out. Values does not check the values: the server does.
func (f Filter) Values() url.Values {
	v := url.Values{}
	set := func(name, val string) {
		if val != "" {
			v.Set(name, val)
		}
	}
	set("id", f.ID)
	set("idPrefix", f.IDPrefix)
	set("eventId", f.EventID)
	set("aggregateContext", f.AggregateContext)
	set("aggregateType", f.AggregateType)
	set("aggregateId", f.AggregateID)
	set("functionContext", f.FunctionContext)
	set("processor", f.Processor)
	set("function", f.Function)
	set("functionKind", string(f.FunctionKind))
	set("status", string(f.Status))
	set("recoverable", string(f.Recoverable))
	set("errorCode", f.ErrorCode)
	set("fingerprint", f.Fingerprint)
	set("executeAtFrom", formatTime(f.ExecuteAtFrom))
	set("executeAtTo", formatTime(f.ExecuteAtTo))
	set("nextRetryAtFrom", formatTime(f.NextRetryAtFrom))
	set("nextRetryAtTo", formatTime(f.NextRetryAtTo))
	if f.MinRetries != 0 {
		v.Set("minRetries", strconv.FormatInt(int64(f.MinRetries), 10))
	}
	set("view", string(f.View))
	return v
}

// Values returns q as the query parameters of GET /api/v1/records: the
// filter's (Filter.Values), then sort, order (desc), limit and cursor
// where set.
func (q Query) Values() url.Values {
	v := q.Filter.Values()
	if q.Sort.Field != "" {
		v.Set("sort", string(q.Sort.Field))
	}
	if q.Sort.Desc {
		v.Set("order", "desc")
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	return v
}

// formatTime is t as the server's filters read it; "" for zero.
func formatTime(t time.Time) string {
	switch {
	case t.IsZero():
		return ""
	case !bounds.Within(t.Year(), 0, 9999):
		return strconv.FormatInt(t.UnixMilli(), 10)
	}
	return t.UTC().Format(time.RFC3339Nano)
}
