package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// history shows the attempts as a timeline above the commands: each
// attempt's start, duration, instance, build, trace and error, and FINAL
// once no automatic retry is left.
func TestHistoryShowsTheAttemptTimeline(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	_, err := e.svc.Execute(t.Context(), id, aggregate.ApplyRetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 60}, aggregate.Meta{Actor: "bob"})
	require.NoError(t, err)
	res, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	require.NoError(t, err)
	res, err = e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionFailed{
		Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp:\n i/o timeout again"}, ExecuteAt: t0 - 1000, Attempt: res.State.Attempt(),
		Run: &aggregate.Run{StartedAt: t0 - 1250, Instance: "inst-b", Build: "v2@def", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	require.NoError(t, e.index.WaitFor(ctx, id, res.Version))

	c := e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "history", id), c.stderr.String())
	out := c.stdout.String()
	assert.Contains(t, out, "ATTEMPT  OUTCOME  STARTED")
	assert.Regexp(t, `(?m)^1 +FAILED +\S+ ago \([^)]*\) +250ms +inst-b +v2@def +4bf92f3577b34da6a3ce929d0e0e4736 +Timeout: smtp: i/o timeout again$`, out)
	assert.Regexp(t, `(?m)^0 +FAILED +.* +- +- +- +- +Timeout: smtp: i/o timeout$`, out, "an attempt recorded without a run shows dashes")
	assert.Regexp(t, `(?m)^1 +FINAL +.*RETRIES_EXHAUSTED: 1 of 1 retries used`, out)
	assert.Contains(t, out, "VERSION  WHEN", "the commands follow")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "history", id, "--attempts", "-o", "json"), c.stderr.String())
	var at api.Attempts
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &at))
	assert.Equal(t, aggregate.FinalRetriesExhausted, at.FinalFailure)
	require.Len(t, at.Timeline, 3)
	assert.Equal(t, int64(250), at.Timeline[1].DurationMs)

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "history", id, "-o", "json"), c.stderr.String())
	var h listJSON[api.HistoryEntry]
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &h), "-o json is the one list shape")
	assert.Len(t, h.Items, 4)
}
