package aggregate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
)

// steps runs commands on a fresh record as the Service would, one stream
// per command, and returns them as Timeline reads them.
func steps(t *testing.T, cmds ...timedCommand) []Step {
	t.Helper()
	s := State{ID: "rec-1"}
	var out []Step
	for i, c := range cmds {
		events, err := Decide(s, c.cmd, at(c.at))
		require.NoError(t, err, "command %d (%s)", i, c.cmd.CommandName())
		v := uint64(i + 1)
		s = EvolveAt(s, v, events...)
		out = append(out, Step{Version: v, CreateTime: c.at, Events: events})
	}
	return out
}

type timedCommand struct {
	at  int64
	cmd Command
}

func TestTimelineOfAFailureAndTwoReplays(t *testing.T) {
	spec := RetrySpec{MaxRetries: 5, MinBackoff: 1, ExecutionTimeout: 60}
	run := func(start int64, instance string) *Run {
		return &Run{StartedAt: start, Instance: instance, Build: "v1", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	}
	tl := Timeline(steps(t,
		timedCommand{t0, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: &spec, Run: run(t0-40, "a")}},
		timedCommand{t0 + 2000, PrepareCompensation{}},
		timedCommand{t0 + 2100, ApplyExecutionFailed{Error: ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: t0 + 2100, Attempt: 1, Run: run(t0+2010, "b")}},
		timedCommand{t0 + 9000, PrepareCompensation{}},
		timedCommand{t0 + 9300, ApplyExecutionSuccess{ExecuteAt: t0 + 9300, Attempt: 2, Run: run(t0+9050, "a")}},
	))
	require.Len(t, tl, 3, "three attempts, no final failure: %+v", tl)
	first, second, third := tl[0], tl[1], tl[2]
	assert.Equal(t, TimelineEntry{Kind: EntryAttempt, Attempt: 0, Version: 1, Outcome: AttemptFailed, StartedAt: t0 - 40, EndedAt: t0, DurationMs: 40,
		Instance: "a", Build: "v1", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Error: &boom, Recoverable: RecoverabilityUnknown}, first)
	assert.Equal(t, int32(1), second.Attempt)
	assert.Equal(t, uint64(3), second.Version, "the version that recorded the result")
	assert.Equal(t, AttemptFailed, second.Outcome)
	assert.Equal(t, t0+2000, second.PreparedAt)
	assert.Equal(t, int64(90), second.DurationMs)
	assert.Equal(t, "b", second.Instance)
	assert.Equal(t, "Timeout", second.Error.ErrorCode)
	assert.Equal(t, AttemptSucceeded, third.Outcome)
	assert.Equal(t, int64(250), third.DurationMs)
	assert.Nil(t, third.Error, "a success has no error")
}

func TestTimelineMarksTheFinalFailureWhereNoRetryIsLeft(t *testing.T) {
	spec := RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 60}
	st := steps(t,
		timedCommand{t0, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: &spec}},
		timedCommand{t0 + 2000, PrepareCompensation{}},
		timedCommand{t0 + 2100, ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 2100, Attempt: 1}},
		// An operator gives it one more retry: no longer final.
		timedCommand{t0 + 5000, ApplyRetrySpec{MaxRetries: 2, MinBackoff: 1, ExecutionTimeout: 60}},
		timedCommand{t0 + 6000, PrepareCompensation{}},
		timedCommand{t0 + 6100, ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 6100, Attempt: 2}},
		// Final again; reclassifying keeps it final without a new marker.
		timedCommand{t0 + 7000, MarkRecoverable{Recoverable: Unrecoverable}},
	)
	tl := Timeline(st)
	var kinds []string
	for _, e := range tl {
		kinds = append(kinds, e.Kind+":"+e.Outcome+e.Reason)
	}
	assert.Equal(t, []string{
		"attempt:FAILED", "attempt:FAILED", "final_failure:RETRIES_EXHAUSTED",
		"attempt:FAILED", "final_failure:RETRIES_EXHAUSTED",
	}, kinds)
	final := tl[2]
	assert.Equal(t, int32(1), final.Attempt)
	assert.Equal(t, uint64(3), final.Version)
	assert.Equal(t, t0+2100, final.EndedAt)
	assert.Equal(t, "1 of 1 retries used; only a force prepare retries it", final.Detail)

	// A record that was recoverable and becomes UNRECOVERABLE is final
	// from that command on.
	tl = Timeline(steps(t,
		timedCommand{t0, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: &spec}},
		timedCommand{t0 + 500, MarkRecoverable{Recoverable: Unrecoverable}},
	))
	require.Len(t, tl, 2)
	assert.Equal(t, FinalUnrecoverable, tl[1].Reason)
	assert.Equal(t, uint64(2), tl[1].Version)
	assert.Equal(t, t0+500, tl[1].EndedAt, "reached when the command ran")

	// A first failure recorded UNRECOVERABLE is final at once.
	s := State{ID: "rec-1"}
	events, err := Decide(s, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, Recoverable: Unrecoverable}, time.UnixMilli(t0))
	require.NoError(t, err)
	tl = Timeline([]Step{{Version: 1, CreateTime: t0, Events: events}})
	require.Len(t, tl, 2)
	assert.Equal(t, EntryFinalFailure, tl[1].Kind)
	s = EvolveAll(s, events...)
	assert.Equal(t, FinalUnrecoverable, FinalFailure(&s))
}

// Streams written before runs existed give attempts with unknown start,
// instance, build and trace, and a running attempt while prepared.
func TestTimelineOfOlderStreamsAndARunningAttempt(t *testing.T) {
	tl := Timeline(steps(t,
		timedCommand{t0, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0}},
		timedCommand{t0 + 2000, PrepareCompensation{}},
	))
	require.Len(t, tl, 2)
	assert.Zero(t, tl[0].StartedAt)
	assert.Zero(t, tl[0].DurationMs)
	assert.Empty(t, tl[0].Instance)
	assert.Equal(t, TimelineEntry{Kind: EntryAttempt, Attempt: 1, Version: 2, Outcome: AttemptRunning, PreparedAt: t0 + 2000}, tl[1])
}
