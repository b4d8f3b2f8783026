package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// GET /api/v1/records/{id}/attempts shows the first failure and each
// replay with its run, and the final failure once no retry is left.
func TestAttemptsAreATimelineWithTheFinalFailure(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, &aggregate.RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 60})
	res, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	require.NoError(t, err)
	run := &aggregate.Run{StartedAt: t0 + 10, Instance: "inst-b", Build: "v2@def", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	res, err = e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionFailed{Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "again"},
		ExecuteAt: t0 + 50, Attempt: res.State.Attempt(), PreparedVersion: res.Version, Run: run}, aggregate.Meta{Actor: "recorder"})
	require.NoError(t, err)
	e.wait(t, id, res.Version)

	r := e.do(t, "GET", "/api/v1/records/"+id+"/attempts", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var got api.Attempts
	r.json(t, &got)
	assert.Equal(t, id, got.ID)
	assert.Equal(t, aggregate.FinalRetriesExhausted, got.FinalFailure, "the record has no retry left")
	require.Len(t, got.Timeline, 3, "%s", r.body)
	assert.Equal(t, aggregate.EntryAttempt, got.Timeline[0].Kind)
	assert.Equal(t, int32(0), got.Timeline[0].Attempt)
	assert.Equal(t, "Timeout", got.Timeline[0].Error.ErrorCode)
	replay := got.Timeline[1]
	assert.Equal(t, int32(1), replay.Attempt)
	assert.Equal(t, aggregate.AttemptFailed, replay.Outcome)
	assert.Equal(t, int64(40), replay.DurationMs)
	assert.Equal(t, "inst-b", replay.Instance)
	assert.Equal(t, "v2@def", replay.Build)
	assert.Equal(t, run.TraceID, replay.TraceID)
	assert.Equal(t, aggregate.EntryFinalFailure, got.Timeline[2].Kind)
	assert.Equal(t, aggregate.FinalRetriesExhausted, got.Timeline[2].Reason)

	r = e.do(t, "GET", "/api/v1/records/nope/attempts", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.do(t, "GET", "/api/v1/records/"+id+"/attempts", "", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	r = e.do(t, "GET", "/api/v1/records/"+id+"/attempts?x=1", viewerKey, nil)
	assert.Equal(t, http.StatusBadRequest, r.status, "no query parameters")
}
