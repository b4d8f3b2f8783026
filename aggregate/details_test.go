package aggregate_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
)

// refusal decides c on the state after history at now and returns the
// *Error it must be refused with.
func refusal(t *testing.T, history []Event, c Command, now int64) *Error {
	t.Helper()
	state := State{ID: "rec-1"}
	if history != nil {
		state = given(history...)
	}
	events, err := Decide(state, c, at(now))
	require.Error(t, err, "%s must be refused", c.CommandName())
	require.Empty(t, events)
	var e *Error
	require.True(t, errors.As(err, &e), "a refusal is an *Error, got %T", err)
	return e
}

func TestRefusalDetails(t *testing.T) {
	spec := DefaultRetrySpec
	exhausted := created(spec, 10)
	exhaustedState := given(exhausted...)
	prepared := preparedAfter(spec, 1)
	preparedState := given(prepared...)
	done := succeeded()
	doneState := given(done...)
	unrecoverable := append(created(RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1}, 1), RecoverableMarked{Recoverable: Unrecoverable})
	unrecoverableState := given(unrecoverable...)
	now := t0 + 500_000

	cases := []struct {
		name    string
		given   []Event
		when    Command
		now     int64
		kind    error
		msg     string
		details map[string]any
	}{
		{name: "prepare of a SUCCEEDED record: nothing replays it", given: done, when: PrepareCompensation{}, now: now,
			kind: ErrIllegalState, msg: "ExecutionFailed can not retry.", details: map[string]any{
				"status": "SUCCEEDED", "retries": int32(1), "maxRetries": int32(10),
				"timeoutAt": doneState.RetryState.TimeoutAt, "nextRetryAt": doneState.RetryState.NextRetryAt,
				"recoverable": "UNKNOWN", "accepted": []string{},
			}},
		{name: "force prepare of a SUCCEEDED record", given: done, when: ForcePrepareCompensation{}, now: now,
			kind: ErrIllegalState, msg: "ExecutionFailed can not force retry.", details: map[string]any{
				"status": "SUCCEEDED", "retries": int32(1), "maxRetries": int32(10),
				"timeoutAt": doneState.RetryState.TimeoutAt, "nextRetryAt": doneState.RetryState.NextRetryAt,
				"recoverable": "UNKNOWN", "accepted": []string{},
			}},
		{name: "prepare of an exhausted FAILED record: force prepare is accepted", given: exhausted, when: PrepareCompensation{}, now: now,
			kind: ErrIllegalState, msg: "ExecutionFailed can not retry.", details: map[string]any{
				"status": "FAILED", "retries": int32(10), "maxRetries": int32(10),
				"timeoutAt": exhaustedState.RetryState.TimeoutAt, "nextRetryAt": exhaustedState.RetryState.NextRetryAt,
				"recoverable": "UNKNOWN", "accepted": []string{NameForcePrepareCompensation},
			}},
		{name: "prepare of a PREPARED record before its timeout: nothing until timeoutAt", given: prepared, when: PrepareCompensation{},
			now: preparedState.RetryState.TimeoutAt, kind: ErrIllegalState, msg: "ExecutionFailed can not retry.", details: map[string]any{
				"status": "PREPARED", "retries": int32(1), "maxRetries": int32(10),
				"timeoutAt": preparedState.RetryState.TimeoutAt, "nextRetryAt": preparedState.RetryState.NextRetryAt,
				"recoverable": "UNKNOWN", "accepted": []string{},
			}},
		{name: "a result on a FAILED record: both prepares are accepted", given: created(spec, 0), when: ApplyExecutionSuccess{ExecuteAt: now},
			now: now, kind: ErrIllegalState, msg: "ExecutionFailed is not prepared.", details: map[string]any{
				"status": "FAILED", "retries": int32(0), "maxRetries": int32(10),
				"timeoutAt": t0 + 120_000, "nextRetryAt": t0 + 180_000,
				"recoverable": "UNKNOWN", "accepted": []string{NamePrepareCompensation, NameForcePrepareCompensation},
			}},
		{name: "a stale result on a PREPARED record", given: preparedAfter(spec, 2), when: ApplyExecutionFailed{Error: boom, ExecuteAt: now, Attempt: 1},
			now: t0 + 2000, kind: ErrStaleAttempt, msg: "ExecutionFailed attempt 1 is stale; the current attempt is 2.", details: map[string]any{
				"status": "PREPARED", "retries": int32(2), "maxRetries": int32(10),
				"timeoutAt": t0 + 2000 + 120_000, "nextRetryAt": t0 + 2000 + 720_000,
				"recoverable": "UNKNOWN", "accepted": []string{},
			}},
		{name: "marking an UNRECOVERABLE record again", given: unrecoverable, when: MarkRecoverable{Recoverable: Unrecoverable}, now: now,
			kind: ErrIllegalArgument, msg: "ExecutionFailed recoverable is already marked to UNRECOVERABLE.", details: map[string]any{
				"status": "FAILED", "retries": int32(1), "maxRetries": int32(1),
				"timeoutAt": unrecoverableState.RetryState.TimeoutAt, "nextRetryAt": unrecoverableState.RetryState.NextRetryAt,
				"recoverable": "UNRECOVERABLE", "accepted": []string{NameForcePrepareCompensation},
			}},
		{name: "create on a FAILED record", given: created(spec, 0), when: create, now: now,
			kind: ErrAlreadyRecorded, msg: "ExecutionFailed rec-1 already records this failure and is FAILED.", details: map[string]any{
				"status": "FAILED", "retries": int32(0), "maxRetries": int32(10),
				"timeoutAt": t0 + 120_000, "nextRetryAt": t0 + 180_000,
				"recoverable": "UNKNOWN", "accepted": []string{NamePrepareCompensation, NameForcePrepareCompensation},
			}},
		{name: "a missing record has no state", when: PrepareCompensation{}, now: now,
			kind: ErrNotFound, msg: "ExecutionFailed rec-1 not found."},
		{name: "an invalid creation of a new record has no state", when: func() Command { c := create; c.ExecuteAt = 0; return c }(), now: now,
			kind: ErrIllegalArgument, msg: "executeAt must be an epoch-millisecond time greater than 0, got 0."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := refusal(t, c.given, c.when, c.now)
			require.ErrorIs(t, e, c.kind)
			assert.Equal(t, c.msg, e.Error(), "the message stays Wow's")
			assert.Equal(t, c.details, e.Details())
		})
	}
}

// The accepted list is what Decide accepts: every listed command succeeds
// on the same state at the same instant, every other replay command fails.
func TestRefusalDetailsAgreeWithDecide(t *testing.T) {
	spec := RetrySpec{MaxRetries: 2, MinBackoff: 10, ExecutionTimeout: 5}
	histories := map[string][]Event{
		"FAILED": created(spec, 0), "exhausted": created(spec, 2), "PREPARED": preparedAfter(spec, 1),
		"SUCCEEDED": append(preparedAfter(spec, 1), ExecutionSuccessApplied{ExecuteAt: t0 + 1500}),
	}
	for name, history := range histories {
		s := given(history...)
		for _, now := range []int64{t0, s.RetryState.TimeoutAt, s.RetryState.TimeoutAt + 1} {
			_, err := Decide(s, ApplyExecutionSuccess{ExecuteAt: now, Attempt: 99}, at(now))
			var e *Error
			require.True(t, errors.As(err, &e), "%s: a result for attempt 99 is refused", name)
			accepted := e.Details()["accepted"].([]string)
			for _, c := range []Command{PrepareCompensation{}, ForcePrepareCompensation{}} {
				_, err := Decide(s, c, at(now))
				assert.Equal(t, err == nil, slices.Contains(accepted, c.CommandName()), "%s at %d: %s listed iff accepted", name, now, c.CommandName())
			}
		}
	}
}

func TestDetailsOfOtherErrors(t *testing.T) {
	assert.Nil(t, (&Error{Kind: ErrIllegalState, Message: "x"}).Details(), "an error built outside Decide has no state")
	var nilErr *Error
	assert.Nil(t, nilErr.Details())
}
