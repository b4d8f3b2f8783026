package aggregate

import "time"

// State is an ExecutionFailed record. The zero State (Status "") is a
// record that does not exist yet.
type State struct {
	// ID is the record id, also the compensation id of replays.
	ID string `json:"id"`
	// EventID identifies the event whose handling failed.
	EventID EventID `json:"eventId"`
	// Function is the function that failed and that replays target.
	Function FunctionInfo `json:"function"`
	// Error is the last failure.
	Error ErrorDetails `json:"error"`
	// ExecuteAt is when the last outcome (creation, failure or success)
	// happened, in epoch ms.
	ExecuteAt int64 `json:"executeAt"`
	// RetrySpec is the record's retry policy.
	RetrySpec RetrySpec `json:"retrySpec"`
	// RetryState is where the record is in its retries.
	RetryState RetryState `json:"retryState"`
	// Status is FAILED, PREPARED or SUCCEEDED; "" before creation.
	Status Status `json:"status"`
	// Recoverable is the failure's classification.
	Recoverable Recoverability `json:"recoverable"`
	// PreparedVersion (beyond Wow) is the record's version after the
	// CompensationPrepared of the current (or last) attempt; 0 if unknown.
	// EvolveAt sets it; results that carry a prepared version are fenced
	// with it.
	PreparedVersion uint64 `json:"preparedVersion,omitempty"`
}

// Exists reports whether the record has been created.
func (s *State) Exists() bool { return s.Status != "" }

// Attempt is the number of the current (or last) prepared attempt: the
// retry count. Results of replays carry it for fencing.
func (s *State) Attempt() int32 { return s.RetryState.Retries }

// IsBelowRetryThreshold reports retries < maxRetries.
func (s *State) IsBelowRetryThreshold() bool {
	return s.RetryState.Retries < s.RetrySpec.MaxRetries
}

// IsRetryable reports status != SUCCEEDED and retries < maxRetries. It
// looks neither at recoverability nor at the timeout.
func (s *State) IsRetryable() bool {
	return s.Status != StatusSucceeded && s.IsBelowRetryThreshold()
}

// Timeout reports whether the current attempt has timed out: now is
// strictly after timeoutAt.
func (s *State) Timeout(now time.Time) bool {
	return now.UnixMilli() > s.RetryState.TimeoutAt
}

// CanForceRetry reports whether ForcePrepareCompensation is accepted: the
// record is FAILED, or PREPARED and timed out. It ignores the retry count.
func (s *State) CanForceRetry(now time.Time) bool {
	switch s.Status {
	case StatusFailed:
		return true
	case StatusPrepared:
		return s.Timeout(now)
	default:
		return false
	}
}

// CanRetry reports whether PrepareCompensation is accepted: CanForceRetry
// and retries < maxRetries.
func (s *State) CanRetry(now time.Time) bool {
	return s.CanForceRetry(now) && s.IsBelowRetryThreshold()
}

// CanNextRetry reports CanRetry and now >= nextRetryAt: the retry is due.
func (s *State) CanNextRetry(now time.Time) bool {
	return s.CanRetry(now) && now.UnixMilli() >= s.RetryState.NextRetryAt
}

// Schedulable reports whether the scheduler prepares the record now: it is
// RECOVERABLE or UNKNOWN and CanNextRetry. A record it selects is one
// PrepareCompensation accepts at the same instant.
//
// Wow's scheduler query tests the timeout with timeoutAt <= now while its
// aggregate requires now > timeoutAt; amends uses the aggregate's rule in
// both places, so at exactly timeoutAt the record is not selected.
func (s *State) Schedulable(now time.Time) bool {
	return s.Recoverable.AutoRetried() && s.CanNextRetry(now)
}
