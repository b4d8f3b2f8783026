package api

import "github.com/amends-dev/amends/aggregate"

// Attempts is GET /api/v1/records/{id}/attempts: the record's attempts,
// oldest first, derived from its history.
type Attempts struct {
	ID string `json:"id"`
	// Timeline is every attempt (the first failure, each replay) with its
	// start, end, duration, instance, build, error and trace id, and a
	// final_failure entry wherever the open record had no automatic retry
	// left.
	Timeline []aggregate.TimelineEntry `json:"timeline"`
	// FinalFailure is why the record, as it is now, has no automatic retry
	// left (RETRIES_EXHAUSTED or UNRECOVERABLE); absent if it has one or is
	// not FAILED.
	FinalFailure string `json:"finalFailure,omitempty"`
}
