package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A read of an id far over the id limit used to reach NATS as a subject
// and KV key, exceed the maximum control line, answer 500 and close the
// connection, and with it the index's watch.
func TestLongIDIsRefusedBeforeNATS(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	long := strings.Repeat("a", 4000)
	for _, path := range []string{
		"/api/v1/records/" + long,
		"/api/v1/records/" + long + "/history",
		"/api/v1/records/" + url.PathEscape(strings.Repeat("é.", 2000)),
		"/api/v1/records/" + url.PathEscape(strings.Repeat("é.", 2000)) + "/history",
	} {
		r := e.do(t, "GET", path, viewerKey, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, "GET %.60s...: %s", path, r.body)
		got := r.apiError(t)
		assert.Equal(t, "BadRequest", got.Code)
		assert.Equal(t, "id", got.Details["field"])
		assert.Contains(t, got.Message, "over the limit of 256")
	}
	r := e.do(t, "POST", "/api/v1/records/"+long+"/prepare_compensation", operatorKey, nil)
	assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	assert.Equal(t, "id", r.apiError(t).Details["field"])

	// The longest id allowed, of characters that need encoding in a
	// subject and a KV key, is an honest 404 everywhere.
	longest := url.PathEscape(strings.Repeat("é.", 64)) // 192 bytes
	longest += strings.Repeat("z", 64)                  // 256 bytes
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/records/" + longest},
		{"GET", "/api/v1/records/" + longest + "/history"},
		{"POST", "/api/v1/records/" + longest + "/prepare_compensation"},
	} {
		r := e.do(t, c.method, c.path, operatorKey, nil)
		assert.Equal(t, http.StatusNotFound, r.status, "%s %s: %s", c.method, c.path, r.body)
	}

	e.healthy(t)
	r = e.do(t, "GET", "/api/v1/records/"+id, viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "a normal read still works: %s", r.body)
	r = e.do(t, "GET", "/api/v1/records/"+id+"/history", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "a normal history still works: %s", r.body)
}
