package api

import (
	"errors"

	"github.com/amends-dev/amends/aggregate"
)

// BatchCommands lists the commands POST /api/v1/batch/{command} runs.
var BatchCommands = []Command{CommandPrepare, CommandForcePrepare}

// Batch defaults and limits, in records per second.
const (
	DefaultBatchRate = 50.0
	MaxBatchRate     = 1000.0
)

// BatchRequest is the body of POST /api/v1/batch/{command}.
type BatchRequest struct {
	// Filter selects the records, as the list filters do; its Now is the
	// time the views are evaluated at.
	Filter Filter `json:"filter"`
	// Limit is the most records to touch (default and maximum: the
	// server's batch limit).
	Limit int `json:"limit,omitempty"`
	// DryRun reports what would happen and touches nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// RatePerSecond paces a real run (default DefaultBatchRate, at most
	// MaxBatchRate).
	RatePerSecond float64 `json:"ratePerSecond,omitempty"`
	// RequestID makes a real run idempotent: the same id returns the
	// stored result, and each record gets one command per request id. A
	// real run needs one.
	RequestID string `json:"requestId,omitempty"`
	// Reason is recorded on every command; force-prepare needs one.
	Reason string `json:"reason,omitempty"`
}

// Batch outcomes of one record (BatchOutcome.Outcome, the keys of
// BatchResult.Counts).
const (
	OutcomeApplied   = "applied"   // the command ran
	OutcomeDuplicate = "duplicate" // an earlier run of this request ran it
	OutcomeRejected  = "rejected"  // the record's state refused it
	OutcomeFailed    = "failed"    // an error other than a rejection
	OutcomeWould     = "would-apply"
	OutcomeWouldNot  = "would-reject"
)

// BatchOutcome is what happened (or would) to one record.
type BatchOutcome struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	Version uint64 `json:"version,omitempty"`
}

// OutcomeOf is what command result res and error err of Execute on
// record id make of it: Applied, Duplicate or Rejected (an
// *aggregate.Error, with its code and message); ok is false for any other
// error, whose outcome the caller words.
func OutcomeOf(id string, res aggregate.Result, err error) (o BatchOutcome, ok bool) {
	var ae *aggregate.Error
	switch {
	case err == nil && res.Duplicate:
		return BatchOutcome{ID: id, Outcome: OutcomeDuplicate, Version: res.Version}, true
	case err == nil:
		return BatchOutcome{ID: id, Outcome: OutcomeApplied, Version: res.Version}, true
	case errors.As(err, &ae):
		return BatchOutcome{ID: id, Outcome: OutcomeRejected, Code: ae.Code(), Message: ae.Message}, true
	}
	return BatchOutcome{ID: id}, false
}

// BatchResult is the result of a batch.
type BatchResult struct {
	Command   string `json:"command"`
	RequestID string `json:"requestId,omitempty"`
	DryRun    bool   `json:"dryRun"`
	// Matched counts the records the filter selects; at most Limit of
	// them are touched.
	Matched int `json:"matched"`
	// Counts per outcome.
	Counts map[string]int `json:"counts"`
	// Records lists each record's outcome.
	Records []BatchOutcome `json:"records"`
	// Complete is false if the run stopped early (the client went away);
	// running it again with the same request id finishes it.
	Complete bool `json:"complete"`
	// Replayed is true when the result is the stored one of an earlier run.
	Replayed bool `json:"replayed,omitempty"`
	// BodyHash identifies the request body the result belongs to.
	BodyHash string `json:"bodyHash,omitempty"`
}

// BatchLine is one line of a streamed batch (Accept: application/x-ndjson):
// first the start, then an outcome per record, then the result.
type BatchLine struct {
	Start   *BatchStart   `json:"start,omitempty"`
	Outcome *BatchOutcome `json:"outcome,omitempty"`
	Result  *BatchResult  `json:"result,omitempty"`
}

// BatchStart opens a streamed batch: how many records match and how many
// outcome lines follow.
type BatchStart struct {
	Matched int `json:"matched"`
	Total   int `json:"total"`
}
