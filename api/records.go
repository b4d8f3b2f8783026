package api

import (
	"encoding/json"

	"github.com/amends-dev/amends/aggregate"
)

// View is one record as GET /api/v1/records/{id} answers it, and as the
// projection persists it: its state after the stream of version Version,
// which the store holds at sequence Seq.
type View struct {
	// State is the record.
	State aggregate.State `json:"state"`
	// Version is the record's version (the number of commands applied).
	Version uint64 `json:"version"`
	// UpdatedAt is when the last command ran (its stream's create time),
	// in epoch ms.
	UpdatedAt int64 `json:"updatedAt"`
	// Seq is the event-store sequence of the record's last stream.
	Seq uint64 `json:"seq"`
}

// Item is a record as a list returns it: what the projection's index
// holds. View has the full record (error message, stack trace, retry
// spec, ...).
type Item struct {
	ID      string `json:"id"`
	Version uint64 `json:"version"`
	EventID string `json:"eventId"`
	// Aggregate is the failed event's aggregate in Wow's shape: its id is
	// Aggregate.AggregateID (not .ID); Aggregate.StoreID() is the
	// eventstore.AggregateID.
	Aggregate   aggregate.WireAggregateID `json:"aggregate"`
	Function    aggregate.FunctionInfo    `json:"function"`
	Status      aggregate.Status          `json:"status"`
	Recoverable aggregate.Recoverability  `json:"recoverable"`
	ErrorCode   string                    `json:"errorCode"`
	Fingerprint string                    `json:"fingerprint,omitempty"`
	ExecuteAt   int64                     `json:"executeAt"`
	Retries     int32                     `json:"retries"`
	MaxRetries  int32                     `json:"maxRetries"`
	TimeoutAt   int64                     `json:"timeoutAt"`
	NextRetryAt int64                     `json:"nextRetryAt"`
}

// Page is one page of a list.
type Page struct {
	Items []Item `json:"items"`
	// Next continues the listing (Query.Cursor); "" on the last page.
	Next string `json:"next,omitempty"`
}

// CountResponse is the body of GET /api/v1/count.
type CountResponse struct {
	Count int `json:"count"`
}

// Summary is the failure overview of the records a filter selects (GET
// /api/v1/summary).
type Summary struct {
	// Total is the number of records.
	Total int `json:"total"`
	// Groups count the records per failing function and error code, the
	// largest group first.
	Groups []FailureGroup `json:"groups"`
	// ByStatus counts the records per status and recoverability.
	ByStatus []StatusCount `json:"byStatus"`
	// Views counts the records in each operator view at the filter's now.
	Views map[aggregate.View]int `json:"views"`
	// Fingerprints groups the records by failure fingerprint, the largest
	// group first; only with by=fingerprint. Records without a fingerprint
	// are left out of it.
	Fingerprints []FingerprintGroup `json:"fingerprints,omitempty"`
	// Removed counts the finished records retention removed that the
	// filter selects, counted in no other field (Total is of the records
	// kept). Only a filter of function, error code and fingerprint fields
	// can select removed records; with any other field it is 0.
	Removed int64 `json:"removed,omitempty"`
}

// FailureGroup is the records of one (function context, processor,
// function, error code).
type FailureGroup struct {
	FunctionContext string `json:"functionContext"`
	Processor       string `json:"processor"`
	Function        string `json:"function"`
	ErrorCode       string `json:"errorCode"`
	// Total counts every record of the group.
	Total int `json:"total"`
	// Retryable counts records neither succeeded nor out of retries
	// (State.IsRetryable, Wow's isRetryable): UNRECOVERABLE ones too,
	// which the scheduler never retries. The CLI and the dashboard name it
	// "under limit"; the records the scheduler will retry are those of
	// the to-retry view.
	Retryable int `json:"retryable"`
	// Exhausted counts records not succeeded and out of retries (not
	// State.IsBelowRetryThreshold): only an operator moves them on.
	Exhausted int `json:"exhausted"`
	// Prepared counts records with a replay under way.
	Prepared int `json:"prepared"`
	// OldestFailureAt and NewestFailureAt are the smallest and largest
	// executeAt (epoch ms) of the group's unfinished records: when the
	// still-open failures happened. Zero if every record succeeded.
	OldestFailureAt int64 `json:"oldestFailureAt,omitempty"`
	NewestFailureAt int64 `json:"newestFailureAt,omitempty"`
	// Removed counts the group's records retention removed (see
	// Summary.Removed); a group whose records were all removed has Total 0.
	Removed int64 `json:"removed,omitempty"`
}

// StatusCount is the number of records of one status and recoverability.
type StatusCount struct {
	Status      aggregate.Status         `json:"status"`
	Recoverable aggregate.Recoverability `json:"recoverable"`
	Count       int                      `json:"count"`
}

// HistoryEntry is one command in GET /api/v1/records/{id}/history.
type HistoryEntry struct {
	Version    uint64            `json:"version"`
	Seq        uint64            `json:"seq"`
	Command    string            `json:"command,omitempty"`
	CommandID  string            `json:"commandId,omitempty"`
	RequestID  string            `json:"requestId,omitempty"`
	TraceID    string            `json:"traceId,omitempty"`
	Actor      string            `json:"actor,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	CreateTime int64             `json:"createTime"`
	Headers    map[string]string `json:"headers,omitempty"`
	Events     []HistoryEvent    `json:"events"`
}

// HistoryEvent is one event of a HistoryEntry or CommandResponse, in its
// wire shape.
type HistoryEvent struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Body json.RawMessage `json:"body"`
}

// FingerprintGroup is the records of one failure fingerprint in GET
// /api/v1/summary?by=fingerprint.
type FingerprintGroup struct {
	Fingerprint string `json:"fingerprint"`
	// FunctionContext, Processor, Function and ErrorCode are those of the
	// group's records (one fingerprint has one function and code).
	FunctionContext string `json:"functionContext"`
	Processor       string `json:"processor"`
	Function        string `json:"function"`
	ErrorCode       string `json:"errorCode"`
	// SampleMessage is the message of one of its failures, cut to
	// MaxSampleBytes.
	SampleMessage string `json:"sampleMessage"`
	// FirstSeen and LastSeen are the smallest and largest executeAt (epoch
	// ms) of the group's records: each record's last outcome (its latest
	// failure, or its success), so FirstSeen is not when the group's first
	// failure happened once its records have been retried. The CLI and the
	// dashboard name them "oldest outcome" and "latest outcome".
	FirstSeen int64 `json:"firstSeen"`
	LastSeen  int64 `json:"lastSeen"`
	// Total counts the records; ByStatus per status.
	Total    int                      `json:"total"`
	ByStatus map[aggregate.Status]int `json:"byStatus"`
	// Removed counts the group's records retention removed (see
	// Summary.Removed).
	Removed int64 `json:"removed,omitempty"`
}

// MaxSampleBytes bounds FingerprintGroup.SampleMessage.
const MaxSampleBytes = 512
