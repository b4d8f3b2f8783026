package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/server"
)

// Bodies are read as strictly as the API documents: exact field names, no
// name twice, UTF-8 only, no invisible characters in reasons, JSON as
// UTF-8 only; a command's Traceparent must be one. Each of these used to
// be accepted (the first changed the record).
func TestBodiesAreStrict(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	path := "/api/v1/records/" + id
	seq := e.lastSeq(t)
	cases := []struct {
		name, command, body string
		header              []string
		status              int
		field, msg          string
	}{
		{"field names match exactly", "mark_recoverable", `{"RECOVERABLE":"UNKNOWN"}`, nil, 400, "RECOVERABLE", `unknown field "RECOVERABLE"`},
		{"a field given twice", "mark_recoverable", `{"recoverable":"UNRECOVERABLE","recoverable":"RECOVERABLE"}`, nil, 400, "recoverable", "given twice"},
		{"a nested field given twice", "force_prepare_compensation", `{"reason":"r","reason":"s"}`, nil, 400, "reason", "given twice"},
		{"invalid UTF-8 in a reason", "force_prepare_compensation", "{\"reason\":\"bad \xff byte\"}", nil, 400, "reason", "not valid UTF-8"},
		{"a lone surrogate in a reason", "force_prepare_compensation", `{"reason":"half \ud800 a pair"}`, nil, 400, "reason", "surrogate"},
		{"a bidi override in a reason", "force_prepare_compensation", "{\"reason\":\"approved \u202egnp.exe\"}", nil, 400, "reason", "U+202E"},
		{"a zero-width space in a reason", "force_prepare_compensation", "{\"reason\":\"ok\u200b\"}", nil, 400, "reason", "U+200B"},
		{"a line separator in a reason", "force_prepare_compensation", "{\"reason\":\"one\u2028two\"}", nil, 400, "reason", "U+2028"},
		{"latin1", "force_prepare_compensation", `{"reason":"r"}`, []string{"Content-Type", "application/json; charset=latin1"}, 415, "Content-Type", "charset"},
		{"another parameter", "force_prepare_compensation", `{"reason":"r"}`, []string{"Content-Type", "application/json; profile=x"}, 415, "Content-Type", "parameter"},
		{"a garbage traceparent", "force_prepare_compensation", `{"reason":"r"}`, []string{"Traceparent", "garbage"}, 400, "Traceparent", "not a W3C traceparent"},
		{"an all-zero traceparent", "force_prepare_compensation", `{"reason":"r"}`, []string{"Traceparent", "00-00000000000000000000000000000000-0000000000000000-01"}, 400, "Traceparent", "not a W3C traceparent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", path+"/"+c.command, operatorKey, c.body, c.header...)
			require.Equal(t, c.status, r.status, "body: %s", r.body)
			got := r.apiError(t)
			assert.Equal(t, c.field, got.Details["field"])
			assert.Contains(t, got.Message, c.msg)
		})
	}
	assert.Equal(t, seq, e.lastSeq(t), "no refused body wrote anything")

	// What is right still passes: charset=utf-8 in any case, a valid
	// traceparent, a reason in any script.
	r := e.do(t, "POST", path+"/mark_recoverable", operatorKey, `{"recoverable":"UNRECOVERABLE","reason":"Greylisting — 灰名单, ok"}`,
		"Content-Type", "application/json; charset=UTF-8", "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
}

// Errors quote at most a short part of what was sent, name things in
// words rather than Go syntax, and every endpoint refuses what it does not
// take.
func TestSmallLeaksAndInconsistencies(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)

	huge := strings.Repeat("9", 60000)
	r := e.do(t, "POST", "/api/v1/records/"+id+"/apply_retry_spec", operatorKey, `{"maxRetries":`+huge+`,"minBackoff":1,"executionTimeout":60}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	assert.Less(t, len(r.body), 400, "a 60 000-digit number is not echoed whole: %s", r.body[:min(len(r.body), 400)])
	assert.Contains(t, r.apiError(t).Message, "(60000 characters)")

	r = e.do(t, "GET", "/api/v1/views/someday", viewerKey, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	assert.NotContains(t, r.apiError(t).Message, "[", "the views are listed in words, not as a Go slice")
	r = e.do(t, "GET", "/api/v1/records?view=someday", viewerKey, nil)
	assert.NotContains(t, r.apiError(t).Message, "[")

	r = e.do(t, "GET", "/api/v1/openapi.json?x=1", "", nil)
	require.Equal(t, http.StatusBadRequest, r.status, "body: %.200s", r.body)
	assert.Equal(t, "x", r.apiError(t).Details["field"])

	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, `{"dryRun":true,"limit":0}`)
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	assert.Equal(t, "limit", r.apiError(t).Details["field"])
	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, `{"dryRun":true}`)
	require.Equal(t, http.StatusOK, r.status, "an absent limit is the default: %s", r.body)

	r = e.do(t, "POST", "/api/v1/replays", operatorKey, `{}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, r.apiError(t).Message, "a range replay needs a reason")
	assert.NotContains(t, r.apiError(t).Message, "force_prepare")

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/../api/v1/records"},
		{"GET", "//api/v1/records"},
		{"GET", "/api/v1/./records"},
		{"POST", "/api/v1/records/" + id + "/../" + id + "/prepare_compensation"},
		{"POST", "/api/v1//batch/prepare_compensation"},
	} {
		status, ct, body := rawRequest(t, e, c.method, c.path)
		assert.Equal(t, http.StatusBadRequest, status, "%s %s: %s", c.method, c.path, body)
		assert.Equal(t, "application/json", ct, "%s %s: a JSON error, not a text/html redirect", c.method, c.path)
		assert.Contains(t, body, `"field":"path"`)
	}

	for _, path := range []string{"/api/v1/records", "/healthz", "/api/v1/records/nope", "/api/v1/nothing"} {
		r := e.do(t, "GET", path, viewerKey, nil)
		assert.Equal(t, "no-store", r.header.Get("Cache-Control"), path)
		assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), path)
		assert.Empty(t, r.header.Get("Strict-Transport-Security"), "%s: no HSTS over plain HTTP", path)
	}

	d := withDashboard(t, e, true)
	r = d.do(t, "PUT", "/ui/v1/session", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, "GET, HEAD, POST, DELETE", r.header.Get("Allow"))
}

// rawRequest sends a request line as it is (an HTTP client would clean the
// path) and returns the status, content type and body.
func rawRequest(t *testing.T, e *env, method, path string) (int, string, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, path, strings.TrimPrefix(e.http.URL, "http://"), operatorKey)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b.String()
}

// DNS rebinding: a page of another site whose name resolves to this
// server's address sends that name as Host. Without tokens it used to read
// records, get a session and a CSRF token, and steer records.
func TestHostHeaderAllowList(t *testing.T) {
	base := newEnv(t)
	id := base.create(t, 1, nil)
	e := base.with(t, func(c *server.Config) {
		c.Tokens = nil
		c.Dashboard = stubDashboard{}
		c.AllowedHosts = []string{"amends.corp.example", "*.amends.example"}
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.http.URL, "http://"))
	seq := e.lastSeq(t)
	for _, host := range []string{"rebind.attacker.example:" + port, "rebind.attacker.example", "amends.corp.example.attacker.example", "amends.example", "xamends.example", "localhost.attacker.example"} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/v1/records"},
			{"GET", "/ui/v1/session"},
			{"GET", "/healthz"},
			{"POST", "/api/v1/records/" + id + "/force_prepare_compensation"},
		} {
			r := e.do(t, c.method, c.path, "", map[string]string{"reason": "rebound"}, "Host", host)
			require.Equal(t, http.StatusMisdirectedRequest, r.status, "%s %s with Host %s: %s", c.method, c.path, host, r.body)
			got := r.apiError(t)
			assert.Equal(t, "MisdirectedRequest", got.Code)
			assert.Equal(t, "Host", got.Details["field"])
			assert.Empty(t, r.header.Get("Set-Cookie"), "no session for a rebound page")
		}
	}
	assert.Equal(t, seq, e.lastSeq(t), "nothing was steered")
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.", "[::1]:" + port, "10.1.2.3", "amends.corp.example", "Amends.Corp.Example.:" + port, "eu.amends.example"} {
		r := e.do(t, "GET", "/api/v1/records", "", nil, "Host", host)
		assert.Equal(t, http.StatusOK, r.status, "Host %s: %s", host, r.body)
	}
}

func TestCheckAllowedHost(t *testing.T) {
	for _, ok := range []string{"amends.example.com", "*.example.com", "*", "localhost", "AMENDS.example.", "10.0.0.1", "[::1]"} {
		assert.NoError(t, server.CheckAllowedHost(ok), ok)
	}
	for _, bad := range []string{"", "*.", "https://amends.example.com", "amends.example.com:8080", "a..b", "amends example", "amends/x", strings.Repeat("a", 64) + ".com"} {
		assert.Error(t, server.CheckAllowedHost(bad), bad)
	}
}
