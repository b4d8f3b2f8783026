package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/healthz", "", nil).status)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/readyz", "", nil).status)
	notReady := error(assertErr("index not loaded"))
	e.ready.Store(&notReady)
	r := e.do(t, "GET", "/readyz", "", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "index not loaded", r.apiError(t).Message)
}

type assertErr string

func (e assertErr) Error() string { return string(e) }

func TestAuthPerRole(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/api/v1/records", "", http.StatusUnauthorized},
		{"GET", "/api/v1/records", "wrong-token-0123456789", http.StatusUnauthorized},
		{"GET", "/api/v1/records", viewerKey, http.StatusOK},
		{"GET", "/api/v1/records", operatorKey, http.StatusOK},
		{"GET", "/metrics", "", http.StatusUnauthorized},
		{"GET", "/metrics", viewerKey, http.StatusOK},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", viewerKey, http.StatusForbidden},
		{"POST", "/api/v1/batch/prepare_compensation", viewerKey, http.StatusForbidden},
		{"GET", "/api/v1/openapi.json", "", http.StatusOK},
		{"GET", "/healthz", "", http.StatusOK},
	} {
		r := e.do(t, c.method, c.path, c.token, nil)
		assert.Equal(t, c.want, r.status, "%s %s with %q: %s", c.method, c.path, c.token, r.body)
		if c.want == http.StatusUnauthorized {
			assert.Equal(t, "Unauthorized", r.apiError(t).Code)
			assert.Equal(t, `Bearer realm="amends"`, r.header.Get("WWW-Authenticate"))
		}
		if c.want == http.StatusForbidden {
			assert.Contains(t, r.apiError(t).Message, "token alice has role viewer; this request needs the operator role")
		}
	}
}

func TestListFiltersSortsAndPages(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 25 {
		ids = append(ids, e.create(t, i, nil))
	}
	// Every page in executeAt order, with a stable cursor.
	var seen []string
	next := ""
	for page := 0; ; page++ {
		path := "/api/v1/records?limit=10&sort=executeAt"
		if next != "" {
			path += "&cursor=" + next
		}
		r := e.do(t, "GET", path, viewerKey, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var p api.Page
		r.json(t, &p)
		for _, it := range p.Items {
			seen = append(seen, it.ID)
		}
		if next = p.Next; next == "" {
			break
		}
		require.Less(t, page, 5, "paging ends")
	}
	assert.Equal(t, ids, seen, "the pages list every record once, oldest first")

	r := e.do(t, "GET", "/api/v1/records?order=desc&limit=1", viewerKey, nil)
	var p api.Page
	r.json(t, &p)
	assert.Equal(t, ids[24], p.Items[0].ID, "desc starts with the newest")

	r = e.do(t, "GET", "/api/v1/records?processor=Mailer&status=failed&errorCode=Timeout&functionKind=EVENT&aggregateId=o-evt-0003", viewerKey, nil)
	r.json(t, &p)
	require.Len(t, p.Items, 1, string(r.body))
	assert.Equal(t, ids[3], p.Items[0].ID)

	var c api.CountResponse
	e.do(t, "GET", "/api/v1/count?processor=Mailer", viewerKey, nil).json(t, &c)
	assert.Equal(t, 25, c.Count)
	e.do(t, "GET", "/api/v1/count?processor=Nobody", viewerKey, nil).json(t, &c)
	assert.Zero(t, c.Count)
}

func TestListRejectsBadParameters(t *testing.T) {
	e := newEnv(t)
	for path, want := range map[string]string{
		"/api/v1/records?stauts=FAILED":        `unknown query parameter "stauts"`,
		"/api/v1/records?status=BROKEN":        `status must be FAILED, PREPARED or SUCCEEDED, got "BROKEN".`,
		"/api/v1/records?limit=0":              "limit must be a whole number from 1 to 1000",
		"/api/v1/records?order=sideways":       "order must be asc or desc",
		"/api/v1/records?sort=color":           "sort",
		"/api/v1/records?cursor=garbage":       "cursor",
		"/api/v1/records?executeAtFrom=monday": "executeAtFrom must be an RFC 3339 time",
		"/api/v1/records?minRetries=-1":        "minRetries must be a whole number from 0 to 2147483647",
		"/api/v1/views/someday":                "the views are to-retry, executing",
		"/api/v1/count?recoverable=maybe":      "recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN",
	} {
		r := e.do(t, "GET", path, viewerKey, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", path, r.body)
		assert.Contains(t, r.apiError(t).Message, want, path)
	}
}

func TestViewsSummaryGetAndHistory(t *testing.T) {
	e := newEnv(t)
	due := e.create(t, 1, &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 60})
	unrec := e.create(t, 2, nil)
	r := e.do(t, "POST", "/api/v1/records/"+unrec+"/mark_recoverable", operatorKey, map[string]string{"recoverable": "UNRECOVERABLE", "reason": "bad address"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	e.clock.SetMillis(t0 + 2000)

	want := map[aggregate.View][]string{
		aggregate.ViewToRetry: {due}, aggregate.ViewNextRetry: {due}, aggregate.ViewUnrecoverable: {unrec},
		aggregate.ViewExecuting: nil, aggregate.ViewSucceeded: nil, aggregate.ViewNonRetryable: nil,
	}
	for view, ids := range want {
		var p api.Page
		r := e.do(t, "GET", "/api/v1/views/"+string(view), viewerKey, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		r.json(t, &p)
		var got []string
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
		assert.Equal(t, ids, got, "view %s", view)
	}

	var sum api.Summary
	e.do(t, "GET", "/api/v1/summary", viewerKey, nil).json(t, &sum)
	assert.Equal(t, 2, sum.Total)
	require.Len(t, sum.Groups, 1)
	assert.Equal(t, "Mailer", sum.Groups[0].Processor)
	assert.Equal(t, 2, sum.Groups[0].Total)

	var v api.View
	r = e.do(t, "GET", "/api/v1/records/"+unrec, viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status)
	r.json(t, &v)
	assert.Equal(t, aggregate.Unrecoverable, v.State.Recoverable)
	assert.Equal(t, uint64(2), v.Version)
	assert.Contains(t, string(r.body), `"isRetryable":true`, "the record has Wow's derived fields")

	var h []api.HistoryEntry
	r = e.do(t, "GET", "/api/v1/records/"+unrec+"/history", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status)
	r.json(t, &h)
	require.Len(t, h, 2)
	assert.Equal(t, uint64(2), h[0].Version, "newest first")
	assert.Equal(t, "bob", h[0].Actor)
	assert.Equal(t, "bad address", h[0].Reason)
	assert.Equal(t, aggregate.NameMarkRecoverable, h[0].Command)
	assert.Equal(t, aggregate.NameRecoverableMarked, h[0].Events[0].Name)
	assert.Equal(t, "recorder", h[1].Actor)

	for _, path := range []string{"/api/v1/records/nope", "/api/v1/records/nope/history"} {
		r := e.do(t, "GET", path, viewerKey, nil)
		assert.Equal(t, http.StatusNotFound, r.status)
		assert.Equal(t, "no ExecutionFailed record with id nope; list records with GET /api/v1/records (amends list)", r.apiError(t).Message)
	}
}
