package aggregate

// ScheduledRetry is one automatic retry still to come: its attempt number
// and the earliest time (epoch ms) the scheduler prepares it.
type ScheduledRetry struct {
	Attempt int32 `json:"attempt"`
	At      int64 `json:"at"`
}

// MaxSchedule bounds the retries RemainingSchedule lists.
const MaxSchedule = 100

// RemainingSchedule returns the automatic retries record s has left, at
// most limit of them (at most MaxSchedule; limit <= 0 means MaxSchedule):
// the next at RetryState.NextRetryAt, each further one an interval later
// (NextRetryAtOf with the record's spec, id and that attempt), assuming
// each replay fails as soon as it is prepared on time. So the times are
// the earliest the scheduler prepares them; a later prepare moves every
// later retry by as much.
//
// It is empty for a record that does not exist, has succeeded, is out of
// retries or is not retried automatically (UNRECOVERABLE), and it ends
// early where the next time would not fit in 64-bit milliseconds. It is
// pure: the record's jitter makes every run give the same times.
func RemainingSchedule(s State, limit int) []ScheduledRetry {
	if limit <= 0 || limit > MaxSchedule {
		limit = MaxSchedule
	}
	if !s.Exists() || s.Status == StatusSucceeded || !s.Recoverable.AutoRetried() {
		return nil
	}
	var out []ScheduledRetry
	at := s.RetryState.NextRetryAt
	for attempt := s.RetryState.Retries + 1; attempt > 0 && attempt <= s.RetrySpec.MaxRetries && len(out) < limit; attempt++ {
		out = append(out, ScheduledRetry{Attempt: attempt, At: at})
		next, err := NextRetryAtOf(s.ID, s.RetrySpec, attempt, at)
		if err != nil {
			break
		}
		at = next
	}
	return out
}
