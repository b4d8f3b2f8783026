package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

func TestCommandsOnOneRecord(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, &aggregate.RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1})
	path := func(cmd string) string { return "/api/v1/records/" + id + "/" + cmd }

	var res api.CommandResponse
	r := e.do(t, "POST", path("prepare_compensation"), operatorKey, nil, "Idempotency-Key", "prep-1")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &res)
	assert.Equal(t, aggregate.StatusPrepared, res.State.Status)
	assert.Equal(t, uint64(2), res.Version)
	require.Len(t, res.Events, 1)
	assert.Equal(t, aggregate.NameCompensationPrepared, res.Events[0].Name)
	assert.False(t, res.Duplicate)

	r = e.do(t, "POST", path("prepare_compensation"), operatorKey, nil, "Idempotency-Key", "prep-1")
	require.Equal(t, http.StatusOK, r.status, "a retried request succeeds")
	r.json(t, &res)
	assert.True(t, res.Duplicate, "and does not prepare twice")
	assert.Equal(t, uint64(2), res.Version)

	r = e.do(t, "POST", path("prepare_compensation"), operatorKey, nil)
	assert.Equal(t, http.StatusConflict, r.status, "prepared and not timed out")
	assert.Equal(t, api.Error{Code: "IllegalState", Message: "ExecutionFailed can not retry.", Details: map[string]any{
		"id": id, "status": "PREPARED", "retries": 1.0, "maxRetries": 1.0, "timeoutAt": float64(t0 + 1000), "nextRetryAt": float64(t0 + 2000),
		"recoverable": "UNKNOWN", "accepted": []any{},
	}}, r.apiError(t), "Wow's message, and details that say why: the attempt runs until timeoutAt")

	e.clock.SetMillis(t0 + 5000) // timed out; 1 of 1 retries used
	r = e.do(t, "POST", path("prepare_compensation"), operatorKey, nil)
	assert.Equal(t, http.StatusConflict, r.status, "out of retries")
	got := r.apiError(t)
	assert.Equal(t, "ExecutionFailed can not retry.", got.Message)
	assert.Equal(t, []any{"force_prepare_compensation"}, got.Details["accepted"], "force-prepare is what the record takes now")
	assert.Equal(t, 1.0, got.Details["retries"])
	assert.Equal(t, 1.0, got.Details["maxRetries"])

	r = e.do(t, "POST", path("force_prepare_compensation"), operatorKey, nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "reason", r.apiError(t).Details["field"])
	r = e.do(t, "POST", path("force_prepare_compensation"), operatorKey, map[string]string{"reason": "mail server fixed"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &res)
	assert.Equal(t, int32(2), res.State.RetryState.Retries, "force-prepare goes beyond the limit: 2 of 1")

	r = e.do(t, "POST", path("apply_retry_spec"), operatorKey, map[string]int{"maxRetries": -1, "minBackoff": 1, "executionTimeout": 1})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Equal(t, "maxRetries must be greater than or equal to 0.", r.apiError(t).Message)
	r = e.do(t, "POST", path("apply_retry_spec"), operatorKey, map[string]int{"maxRetries": 5, "minBackoff": 1})
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "apply_retry_spec requires the field executionTimeout.", r.apiError(t).Message)
	r = e.do(t, "POST", path("apply_retry_spec"), operatorKey, map[string]int{"maxRetries": 5, "minBackoff": 1, "executionTimeout": 1})
	assert.Equal(t, http.StatusOK, r.status, string(r.body))

	r = e.do(t, "POST", path("mark_recoverable"), operatorKey, map[string]string{"recoverable": "UNKNOWN"})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Equal(t, "ExecutionFailed recoverable is already marked to UNKNOWN.", r.apiError(t).Message)

	moved := map[string]string{"functionKind": "EVENT", "contextName": "order", "processorName": "Mailer2", "name": "onOrderPlaced"}
	r = e.do(t, "POST", path("change_function"), operatorKey, moved)
	assert.Equal(t, http.StatusBadRequest, r.status, "change_function needs a reason")
	moved["reason"] = "Mailer was renamed Mailer2"
	r = e.do(t, "POST", path("change_function"), operatorKey, moved)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &res)
	assert.Equal(t, "Mailer2", res.State.Function.ProcessorName)

	// The index already shows the change (read your writes).
	r = e.do(t, "GET", "/api/v1/count?processor=Mailer2", viewerKey, nil)
	assert.JSONEq(t, `{"count":1}`, string(r.body))
}

func TestCommandErrors(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		code, msg  string
	}{
		{"unknown id", "/api/v1/records/missing/prepare_compensation", nil, http.StatusNotFound, "NotFound",
			"no ExecutionFailed record with id missing; list records with GET /api/v1/records (amends list)"},
		{"unknown command", "/api/v1/records/" + id + "/delete", nil, http.StatusNotFound, "NotFound",
			`unknown command "delete"; the commands are prepare_compensation, force_prepare_compensation, apply_retry_spec, mark_recoverable, change_function`},
		{"recorder command", "/api/v1/records/" + id + "/apply_execution_success", `{"executeAt":1}`, http.StatusNotFound, "NotFound", `unknown command "apply_execution_success"`},
		{"malformed body", "/api/v1/records/" + id + "/mark_recoverable", `{"recoverable":`, http.StatusBadRequest, "BadRequest", "the body of mark_recoverable ends before its JSON object does"},
		{"bad enum", "/api/v1/records/" + id + "/mark_recoverable", `{"recoverable":"SOMETIMES"}`, http.StatusBadRequest, "BadRequest", `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "SOMETIMES".`},
		{"oversized", "/api/v1/records/" + id + "/prepare_compensation", `{"reason":"` + strings.Repeat("x", 70_000) + `"}`, http.StatusRequestEntityTooLarge, "PayloadTooLarge", "over the limit of 64 KiB"},
		{"long reason", "/api/v1/records/" + id + "/prepare_compensation", map[string]string{"reason": strings.Repeat("x", 2000)}, http.StatusBadRequest, "BadRequest", "reason is 2000 bytes"},
		{"no route", "/api/v2/records", nil, http.StatusNotFound, "NotFound", "no route POST /api/v2/records"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", c.path, operatorKey, c.body)
			assert.Equal(t, c.status, r.status, string(r.body))
			got := r.apiError(t)
			assert.Equal(t, c.code, got.Code)
			assert.Contains(t, got.Message, c.msg)
		})
	}
	var v struct{ Version uint64 }
	e.do(t, "GET", "/api/v1/records/"+id, viewerKey, nil).json(t, &v)
	assert.Equal(t, uint64(1), v.Version, "no failed request changed the record")
}

func TestSucceededRecordRefusesForcePrepare(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	_, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	res, err := e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0 + 1}, aggregate.Meta{})
	require.NoError(t, err)
	e.wait(t, id, res.Version)
	r := e.do(t, "POST", "/api/v1/records/"+id+"/force_prepare_compensation", operatorKey, map[string]string{"reason": "try again"})
	assert.Equal(t, http.StatusConflict, r.status)
	got := r.apiError(t)
	assert.Equal(t, "ExecutionFailed can not force retry.", got.Message)
	assert.Equal(t, "SUCCEEDED", got.Details["status"])
	assert.Equal(t, []any{}, got.Details["accepted"], "a succeeded record takes no replay")

	r = e.do(t, "POST", "/api/v1/records/"+id+"/prepare_compensation", operatorKey, nil)
	assert.Equal(t, http.StatusConflict, r.status)
	got = r.apiError(t)
	assert.Equal(t, "ExecutionFailed can not retry.", got.Message)
	for _, k := range []string{"id", "status", "retries", "maxRetries", "timeoutAt", "recoverable", "accepted"} {
		assert.Contains(t, got.Details, k, "details an operator can act on")
	}
	assert.Equal(t, "SUCCEEDED", got.Details["status"])
}

// An Idempotency-Key belongs to the first request that used it: sending
// that request again is a duplicate, sending another one with the key is
// refused, as a batch's requestId is.
func TestIdempotencyKeyReusedForAnotherRequest(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	other := e.create(t, 2, nil)
	prepare := "/api/v1/records/" + id + "/prepare_compensation"

	r := e.do(t, "POST", prepare, operatorKey, nil, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do(t, "POST", prepare, operatorKey, `{ }`, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, r.status, "the same request again (an empty body is {}): %s", r.body)
	var res api.CommandResponse
	r.json(t, &res)
	assert.True(t, res.Duplicate)

	before := e.lastSeq(t)
	for name, c := range map[string]struct {
		path string
		body any
	}{
		"another command": {"/api/v1/records/" + id + "/mark_recoverable", map[string]string{"recoverable": "UNRECOVERABLE"}},
		"another record":  {"/api/v1/records/" + other + "/prepare_compensation", nil},
		"another body":    {prepare, map[string]string{"reason": "again"}},
	} {
		r := e.do(t, "POST", c.path, operatorKey, c.body, "Idempotency-Key", "k-1")
		assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s: %s", name, r.body)
		got := r.apiError(t)
		assert.Equal(t, "IdempotencyKeyReused", got.Code, name)
		assert.Equal(t, "Idempotency-Key", got.Details["field"], name)
		assert.Contains(t, got.Message, `Idempotency-Key "k-1" was used for another request`, name)
	}
	assert.Equal(t, before, e.lastSeq(t), "no refused request wrote anything")

	// A command the record refuses wrote nothing and does not hold its key.
	r = e.do(t, "POST", prepare, operatorKey, nil, "Idempotency-Key", "k-2")
	require.Equal(t, http.StatusConflict, r.status, "prepared and not timed out: %s", r.body)
	r = e.do(t, "POST", "/api/v1/records/"+id+"/apply_retry_spec", operatorKey, map[string]int{"maxRetries": 3, "minBackoff": 1, "executionTimeout": 5}, "Idempotency-Key", "k-2")
	assert.Equal(t, http.StatusOK, r.status, "the key of a refused command is free: %s", r.body)
}
