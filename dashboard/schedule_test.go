package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/dashboard"
)

func TestComputeSchedule(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	ms := now.UnixMilli()
	failed := func(retries int32, next int64, rec aggregate.Recoverability) aggregate.State {
		return aggregate.State{Status: aggregate.StatusFailed, Recoverable: rec,
			RetryState: aggregate.RetryState{Retries: retries, RetryAt: ms - 1000, TimeoutAt: ms - 500, NextRetryAt: next}}
	}
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 5}
	cases := []struct {
		name  string
		state aggregate.State
		spec  aggregate.RetrySpec
		want  []dashboard.Attempt
		note  string
		more  int64
	}{
		{
			name:  "a fresh record: due at its nextRetryAt, then minBackoff·2^retries after each prepare",
			state: failed(0, ms+10_000, aggregate.Recoverable), spec: spec,
			want: []dashboard.Attempt{
				{Attempt: 1, At: ms + 10_000, TimeoutAt: ms + 15_000},
				{Attempt: 2, At: ms + 30_000, TimeoutAt: ms + 35_000}, // + 10s·2^1
				{Attempt: 3, At: ms + 70_000, TimeoutAt: ms + 75_000}, // + 10s·2^2
			},
		},
		{
			name:  "an overdue retry is due now",
			state: failed(2, ms-60_000, aggregate.RecoverabilityUnknown), spec: spec,
			want: []dashboard.Attempt{{Attempt: 3, At: ms, TimeoutAt: ms + 5_000}},
		},
		{
			name: "a running attempt: the next no earlier than its timeout",
			state: aggregate.State{Status: aggregate.StatusPrepared, Recoverable: aggregate.Recoverable,
				RetryState: aggregate.RetryState{Retries: 1, RetryAt: ms, TimeoutAt: ms + 50_000, NextRetryAt: ms + 20_000}},
			spec: spec,
			want: []dashboard.Attempt{
				{Attempt: 2, At: ms + 50_001, TimeoutAt: ms + 55_001},
				{Attempt: 3, At: ms + 90_001, TimeoutAt: ms + 95_001},
			},
		},
		{name: "out of retries", state: failed(3, ms, aggregate.Recoverable), spec: spec, note: "no retries are left (3 of 3); a force-prepare replays it, or a larger maxRetries lets the scheduler go on"},
		{name: "unrecoverable", state: failed(0, ms, aggregate.Unrecoverable), spec: spec, note: "the record is UNRECOVERABLE: the scheduler does not retry it; a force-prepare replays it"},
		{name: "succeeded", state: aggregate.State{Status: aggregate.StatusSucceeded, Recoverable: aggregate.Recoverable}, spec: spec, note: "the record has succeeded: nothing is left to retry"},
		{
			name: "a long schedule is cut at 50 rows", state: failed(0, ms, aggregate.Recoverable),
			spec: aggregate.RetrySpec{MaxRetries: 1000, MinBackoff: 0, ExecutionTimeout: 1}, more: 950,
		},
		{
			name: "a retry whose time overflows stops the schedule with the aggregate's message", state: failed(0, ms, aggregate.Recoverable),
			spec: aggregate.RetrySpec{MaxRetries: 40, MinBackoff: 2_000_000_000, ExecutionTimeout: 1},
			note: "retry 22 and later cannot be computed: long overflow", more: 19,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := dashboard.ComputeSchedule(c.state, c.spec, now)
			if c.want != nil {
				assert.Equal(t, c.want, got.Attempts)
			}
			if c.name == "a long schedule is cut at 50 rows" {
				assert.Len(t, got.Attempts, 50)
			}
			assert.Equal(t, c.note, got.Note)
			assert.Equal(t, c.more, got.More)
			assert.Equal(t, c.spec, got.Spec)
		})
	}
}

// The schedule follows the aggregate: the attempt times are the times at
// which the record's own prepares, run at those times, set nextRetryAt.
func TestComputeScheduleMatchesTheAggregate(t *testing.T) {
	spec := aggregate.RetrySpec{MaxRetries: 4, MinBackoff: 7, ExecutionTimeout: 3}
	now := time.UnixMilli(5_000_000)
	s := aggregate.EvolveAll(aggregate.State{}, aggregate.ExecutionFailedCreated{ExecuteAt: now.UnixMilli(), RetrySpec: spec, Recoverable: aggregate.Recoverable,
		RetryState: aggregate.RetryState{RetryAt: now.UnixMilli(), TimeoutAt: now.UnixMilli() + 3000, NextRetryAt: now.UnixMilli() + 7000}})
	sch := dashboard.ComputeSchedule(s, spec, now)
	assert.Len(t, sch.Attempts, 4)
	for _, a := range sch.Attempts {
		at := time.UnixMilli(a.At)
		assert.True(t, s.Schedulable(at), "the scheduler selects attempt %d at %d", a.Attempt, a.At)
		events, err := aggregate.Decide(s, aggregate.PrepareCompensation{}, at)
		assert.NoError(t, err)
		s = aggregate.EvolveAll(s, events...)
		assert.Equal(t, a.Attempt, s.RetryState.Retries)
		assert.Equal(t, a.TimeoutAt, s.RetryState.TimeoutAt)
		events, err = aggregate.Decide(s, aggregate.ApplyExecutionFailed{Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "again"}, ExecuteAt: a.At, Attempt: a.Attempt}, at)
		assert.NoError(t, err)
		s = aggregate.EvolveAll(s, events...)
	}
	assert.False(t, s.IsBelowRetryThreshold(), "the schedule lists every remaining retry")
}
