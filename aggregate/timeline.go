package aggregate

import (
	"fmt"

	"github.com/amends-dev/amends/eventstore"
)

// Timeline entry kinds.
const (
	// EntryAttempt is one execution of the function: the first failure
	// (attempt 0) or a replay.
	EntryAttempt = "attempt"
	// EntryFinalFailure marks the point where the record, open (FAILED),
	// has no automatic retry left: its retries are exhausted or it is
	// UNRECOVERABLE. Only an operator moves it on from there.
	EntryFinalFailure = "final_failure"
)

// Attempt outcomes in a timeline.
const (
	AttemptFailed    = "FAILED"
	AttemptSucceeded = "SUCCEEDED"
	// AttemptRunning: prepared, and no result is recorded yet (it may
	// still run, or have timed out).
	AttemptRunning = "RUNNING"
)

// Final-failure reasons.
const (
	FinalRetriesExhausted = "RETRIES_EXHAUSTED"
	FinalUnrecoverable    = "UNRECOVERABLE"
)

// Step is one stored command of a record as Timeline reads it: its version,
// its stream's create time (epoch ms) and its events.
type Step struct {
	Version    uint64
	CreateTime int64
	Events     []Event
}

// TimelineEntry is one entry of a record's attempt timeline. Times are
// epoch ms; a zero time, duration or name is unknown (a stream written
// before amends recorded runs) and absent from the JSON.
type TimelineEntry struct {
	// Kind is EntryAttempt or EntryFinalFailure.
	Kind string `json:"kind"`
	// Attempt is the attempt number: 0 for the first failure, then the
	// retry count of the prepare it ran for. For a final failure, the
	// attempt after which no automatic retry was left.
	Attempt int32 `json:"attempt"`
	// Version is the record version that recorded the entry (for a running
	// attempt, its prepare).
	Version uint64 `json:"version"`
	// Outcome is AttemptFailed, AttemptSucceeded or AttemptRunning; empty
	// for a final failure.
	Outcome string `json:"outcome,omitempty"`
	// PreparedAt is when the replay was prepared; 0 for the first failure.
	PreparedAt int64 `json:"preparedAt,omitempty"`
	// StartedAt and EndedAt bound the execution; DurationMs is their
	// difference when both are known. For a final failure, EndedAt is
	// when it was reached.
	StartedAt  int64 `json:"startedAt,omitempty"`
	EndedAt    int64 `json:"endedAt,omitempty"`
	DurationMs int64 `json:"durationMs,omitempty"`
	// Instance, Build and TraceID are the attempt's Run.
	Instance string `json:"instance,omitempty"`
	Build    string `json:"build,omitempty"`
	TraceID  string `json:"traceId,omitempty"`
	// Error is the failure of a failed attempt.
	Error *ErrorDetails `json:"error,omitempty"`
	// Recoverable is the failure's classification.
	Recoverable Recoverability `json:"recoverable,omitempty"`
	// Reason says why a final failure is final: FinalRetriesExhausted or
	// FinalUnrecoverable; Detail says it in words.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Timeline derives a record's attempts from its steps, oldest first, and
// returns them oldest first. It evolves the record through the steps, so a
// final failure is marked exactly where the scheduler's predicate stops
// selecting an open record for good (FAILED with no retry left, or
// UNRECOVERABLE), whichever command made it so; a record that gets a retry
// back (a larger retry spec, a reclassification, a re-opening) can reach a
// final failure again later. It is derived, not stored: the record's
// events stay Wow's seven. Pure and safe for concurrent use.
func Timeline(steps []Step) []TimelineEntry {
	var (
		out     []TimelineEntry
		s       State
		running = -1 // index in out of the attempt prepared and not settled
		final   bool
	)
	for _, st := range steps {
		for _, e := range st.Events {
			switch e := e.(type) {
			case ExecutionFailedCreated:
				running = -1
				out = append(out, attemptEntry(0, st.Version, 0, e.ExecuteAt, e.Run, AttemptFailed, &e.Error, orUnknown(e.Recoverable)))
			case CompensationPrepared:
				out = append(out, TimelineEntry{Kind: EntryAttempt, Attempt: e.RetryState.Retries, Version: st.Version,
					Outcome: AttemptRunning, PreparedAt: e.RetryState.RetryAt})
				running = len(out) - 1
			case ExecutionFailedApplied:
				out = settle(out, running, e.Attempt, st.Version, e.ExecuteAt, e.Run, AttemptFailed, &e.Error, orUnknown(e.Recoverable))
				running = -1
			case ExecutionSuccessApplied:
				out = settle(out, running, e.Attempt, st.Version, e.ExecuteAt, e.Run, AttemptSucceeded, nil, "")
				running = -1
			}
			s = Evolve(s, e)
		}
		now := finalReason(&s)
		if now != "" && !final {
			out = append(out, TimelineEntry{Kind: EntryFinalFailure, Attempt: s.Attempt(), Version: st.Version,
				EndedAt: max(s.ExecuteAt, st.CreateTime), Reason: now, Detail: finalDetail(&s, now),
				Recoverable: s.Recoverable})
		}
		final = now != ""
	}
	return out
}

// FinalFailure reports why record s has no automatic retry left while open
// (FinalRetriesExhausted or FinalUnrecoverable), or "" if it has one or is
// not FAILED. It is the negation, for FAILED records, of what the
// scheduler can still select at some time.
func FinalFailure(s *State) string { return finalReason(s) }

func finalReason(s *State) string {
	switch {
	case s.Status != StatusFailed:
		return ""
	case !s.Recoverable.AutoRetried():
		return FinalUnrecoverable
	case !s.IsBelowRetryThreshold():
		return FinalRetriesExhausted
	}
	return ""
}

func finalDetail(s *State, reason string) string {
	if reason == FinalUnrecoverable {
		return "the failure is UNRECOVERABLE; the scheduler does not retry it"
	}
	return fmt.Sprintf("%d of %d retries used; only a force prepare retries it", s.RetryState.Retries, s.RetrySpec.MaxRetries)
}

func attemptEntry(attempt int32, version uint64, preparedAt, endedAt int64, r *Run, outcome string, e *ErrorDetails, rec Recoverability) TimelineEntry {
	t := TimelineEntry{Kind: EntryAttempt, Attempt: attempt, Version: version, Outcome: outcome, PreparedAt: preparedAt,
		EndedAt: endedAt, Error: e, Recoverable: rec}
	if r != nil {
		t.StartedAt, t.Instance, t.Build, t.TraceID = r.StartedAt, r.Instance, r.Build, r.TraceID
		if r.StartedAt > 0 && endedAt >= r.StartedAt {
			t.DurationMs = endedAt - r.StartedAt
		}
	}
	return t
}

// settle completes the running attempt with its result, or appends the
// result as an attempt of its own when no prepare is known for it.
func settle(out []TimelineEntry, running int, attempt int32, version uint64, endedAt int64, r *Run, outcome string, e *ErrorDetails, rec Recoverability) []TimelineEntry {
	if running >= 0 && (attempt == 0 || attempt == out[running].Attempt) {
		p := out[running]
		out[running] = attemptEntry(p.Attempt, version, p.PreparedAt, endedAt, r, outcome, e, rec)
		return out
	}
	return append(out, attemptEntry(attempt, version, 0, endedAt, r, outcome, e, rec))
}

// StepsOf decodes a record's stored streams, oldest first, for Timeline.
// An event that does not decode is an ErrIllegalArgument naming it.
func StepsOf(streams []eventstore.Stream) ([]Step, error) {
	out := make([]Step, 0, len(streams))
	for _, st := range streams {
		s := Step{Version: st.Version, CreateTime: st.CreateTime}
		for _, e := range st.Events {
			ev, err := DecodeEvent(e.Name, e.Body)
			if err != nil {
				return nil, err
			}
			s.Events = append(s.Events, ev)
		}
		out = append(out, s)
	}
	return out, nil
}
