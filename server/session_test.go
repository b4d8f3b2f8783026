package server_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/server"
)

// stubDashboard answers every page and data request with its path.
type stubDashboard struct{}

func (stubDashboard) ServePage(w http.ResponseWriter, r *http.Request) {
	_, _ = w.Write([]byte("page " + r.URL.Path))
}
func (stubDashboard) ServeData(w http.ResponseWriter, r *http.Request) {
	_, _ = w.Write([]byte("data " + r.URL.Path))
}

func withDashboard(tb testing.TB, e *env, tokens bool) *env {
	tb.Helper()
	return e.with(tb, func(c *server.Config) {
		c.Dashboard = stubDashboard{}
		if !tokens {
			c.Tokens = nil
		}
	})
}

// signIn signs in with token and returns the session cookie and the CSRF
// token.
func signIn(tb testing.TB, e *env, token string) (cookie, csrf string, resp response) {
	tb.Helper()
	resp = e.do(tb, "POST", "/ui/v1/session", "", map[string]string{"token": token}, "Origin", e.http.URL)
	for _, c := range (&http.Response{Header: resp.header}).Cookies() {
		if c.Name == server.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	if resp.status == http.StatusOK {
		var info server.SessionInfo
		resp.json(tb, &info)
		csrf = info.CSRF
	}
	return cookie, csrf, resp
}

func TestSignInSetsAStrictHttpOnlyCookieAndNeverEchoesTheToken(t *testing.T) {
	e := withDashboard(t, newEnv(t), true)
	cookie, csrf, resp := signIn(t, e, operatorKey)
	require.Equal(t, http.StatusOK, resp.status, "body: %s", resp.body)
	require.NotEmpty(t, cookie)
	require.NotEmpty(t, csrf)
	assert.NotContains(t, string(resp.body), operatorKey, "the token is never echoed")
	assert.NotContains(t, cookie, operatorKey, "the cookie holds a session id, not the token")
	sc := resp.header.Get("Set-Cookie")
	assert.Contains(t, sc, "HttpOnly")
	assert.Contains(t, sc, "SameSite=Strict")
	assert.Contains(t, sc, "Path=/")
	assert.NotContains(t, sc, "Secure", "no Secure over plain HTTP (the test server)")
	assert.Equal(t, "no-store", resp.header.Get("Cache-Control"))
	var info server.SessionInfo
	resp.json(t, &info)
	assert.Equal(t, server.SessionInfo{Name: "bob", Role: server.RoleOperator, CSRF: csrf, Expires: t0 + server.SessionTTL.Milliseconds()}, info)

	// The cookie authenticates reads; whoami answers the same session.
	got := e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, got.status)
	got.json(t, &info)
	assert.Equal(t, "bob", info.Name)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/records", "", nil, "Cookie", cookie).status)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/ui/v1/live-or-anything", "", nil, "Cookie", cookie).status)

	// A wrong token is refused without repeating it.
	_, _, bad := signIn(t, e, "not-a-known-token-at-all")
	assert.Equal(t, http.StatusUnauthorized, bad.status)
	assert.NotContains(t, string(bad.body), "not-a-known-token-at-all")
	assert.Empty(t, bad.header.Get("Set-Cookie"))
}

func TestSessionCookieIsSecureUnderTLS(t *testing.T) {
	e := newEnv(t)
	e.cfg.Dashboard = stubDashboard{}
	e.cfg.AllowedHosts = []string{"amends.example"}
	h := server.New(e.cfg).Handler()
	req, err := http.NewRequest("POST", "https://amends.example/ui/v1/session", strings.NewReader(`{"token":"`+viewerKey+`"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://amends.example")
	req.TLS = &tls.ConnectionState{HandshakeComplete: true}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body.String())
	assert.Contains(t, w.Header().Get("Set-Cookie"), "Secure")
}

func TestCookieCommandsNeedTheOriginAndTheCSRFToken(t *testing.T) {
	e := withDashboard(t, newEnv(t), true)
	id := e.create(t, 1, nil)
	cookie, csrf, resp := signIn(t, e, operatorKey)
	require.Equal(t, http.StatusOK, resp.status)
	path := "/api/v1/records/" + id + "/force_prepare_compensation"
	body := map[string]string{"reason": "mail server is back"}
	seq := e.lastSeq(t)

	cases := []struct {
		name   string
		header []string
		code   string
	}{
		{"no CSRF token", []string{"Cookie", cookie, "Origin", e.http.URL}, "CSRF"},
		{"wrong CSRF token", []string{"Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, csrf[:len(csrf)-1] + "x"}, "CSRF"},
		{"no Origin", []string{"Cookie", cookie, server.CSRFHeader, csrf}, "CSRF"},
		{"cross-origin", []string{"Cookie", cookie, "Origin", "https://evil.example", server.CSRFHeader, csrf}, "CrossOrigin"},
		{"cross-site fetch", []string{"Cookie", cookie, "Origin", e.http.URL, "Sec-Fetch-Site", "cross-site", server.CSRFHeader, csrf}, "CrossOrigin"},
		{"cross-origin with a bearer token", []string{"Authorization", "Bearer " + operatorKey, "Origin", "https://evil.example"}, "CrossOrigin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := e.do(t, "POST", path, "", body, c.header...)
			require.Equal(t, http.StatusForbidden, got.status, "body: %s", got.body)
			assert.Equal(t, c.code, got.apiError(t).Code)
			assert.NotContains(t, string(got.body), csrf, "the CSRF token is never echoed")
		})
	}
	assert.Equal(t, seq, e.lastSeq(t), "no refused request wrote anything")

	got := e.do(t, "POST", path, "", body, "Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, csrf)
	require.Equal(t, http.StatusOK, got.status, "body: %s", got.body)
	hist := e.do(t, "GET", "/api/v1/records/"+id+"/history", operatorKey, nil)
	assert.Contains(t, string(hist.body), `"actor":"bob"`, "the session's actor is recorded")
}

func TestViewerSessionCannotSendCommands(t *testing.T) {
	e := withDashboard(t, newEnv(t), true)
	id := e.create(t, 1, nil)
	cookie, csrf, resp := signIn(t, e, viewerKey)
	require.Equal(t, http.StatusOK, resp.status)
	got := e.do(t, "POST", "/api/v1/records/"+id+"/"+aggregate.NamePrepareCompensation, "", map[string]string{}, "Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, csrf)
	assert.Equal(t, http.StatusForbidden, got.status)
	assert.Equal(t, "Forbidden", got.apiError(t).Code)
}

func TestSignInRefusesAnotherOrigin(t *testing.T) {
	e := withDashboard(t, newEnv(t), true)
	got := e.do(t, "POST", "/ui/v1/session", "", map[string]string{"token": operatorKey}, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, got.status)
	assert.Empty(t, got.header.Get("Set-Cookie"))
}

func TestSignOutNeedsCSRFAndEndsTheSession(t *testing.T) {
	e := withDashboard(t, newEnv(t), true)
	cookie, csrf, _ := signIn(t, e, viewerKey)
	assert.Equal(t, http.StatusForbidden, e.do(t, "DELETE", "/ui/v1/session", "", nil, "Cookie", cookie, "Origin", e.http.URL).status)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie).status, "a refused sign-out leaves the session")
	assert.Equal(t, http.StatusNoContent, e.do(t, "DELETE", "/ui/v1/session", "", nil, "Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, csrf).status)
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie).status)
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/records", "", nil, "Cookie", cookie).status)
}

func TestWithoutTokensTheBrowserGetsALocalSessionAndCSRFStillHolds(t *testing.T) {
	e := withDashboard(t, newEnv(t), false)
	id := e.create(t, 1, nil)
	got := e.do(t, "GET", "/ui/v1/session", "", nil)
	require.Equal(t, http.StatusOK, got.status)
	var info server.SessionInfo
	got.json(t, &info)
	assert.True(t, info.Local)
	assert.Equal(t, server.LocalActor, info.Name)
	var cookie string
	for _, c := range (&http.Response{Header: got.header}).Cookies() {
		cookie = c.Name + "=" + c.Value
	}
	path := "/api/v1/records/" + id + "/force_prepare_compensation"
	body := map[string]string{"reason": "r"}
	assert.Equal(t, http.StatusForbidden, e.do(t, "POST", path, "", body, "Origin", e.http.URL).status, "a browser without a session")
	assert.Equal(t, http.StatusForbidden, e.do(t, "POST", path, "", body, "Origin", "http://evil.example").status, "another site")
	assert.Equal(t, http.StatusForbidden, e.do(t, "POST", path, "", body, "Cookie", cookie, "Origin", e.http.URL).status, "no CSRF token")
	assert.Equal(t, http.StatusOK, e.do(t, "POST", path, "", body, "Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, info.CSRF).status)
	// A client that is no browser (the CLI) still needs nothing.
	assert.Equal(t, http.StatusConflict, e.do(t, "POST", path, "", body).status, "the CLI reaches the aggregate, which refuses a second force-prepare of a running attempt")
}

func TestDashboardRoutesOnlyWithADashboard(t *testing.T) {
	e := newEnv(t)
	assert.Equal(t, http.StatusNotFound, e.do(t, "GET", "/", "", nil).status)
	assert.Equal(t, http.StatusNotFound, e.do(t, "GET", "/ui/v1/session", "", nil).status)
	d := withDashboard(t, e, true)
	got := d.do(t, "GET", "/", "", nil)
	assert.Equal(t, "page /", string(got.body))
	assert.Equal(t, http.StatusUnauthorized, d.do(t, "GET", "/ui/v1/live", "", nil).status, "data needs a session or token")
	assert.Equal(t, "data /ui/v1/live", string(d.do(t, "GET", "/ui/v1/live", viewerKey, nil).body))
}
