package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/server"
)

// streamDashboard streams /ui/v1/live until the request's context ends,
// like the dashboard's live stream, and answers every other request with
// its path.
type streamDashboard struct{ stubDashboard }

func (streamDashboard) ServeData(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ui/v1/live" {
		_, _ = w.Write([]byte("data " + r.URL.Path))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, "event: counts\ndata: {}\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// liveStream is an open /ui/v1/live whose body is read to its end in the
// background.
type liveStream struct{ done chan struct{} }

// openStream opens /ui/v1/live with the given header pairs, waits for its
// first event and goes on reading it until it ends.
func openStream(t *testing.T, base string, header ...string) *liveStream {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", base+"/ui/v1/live", nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: counts\n", line)
	s := &liveStream{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_, _ = io.Copy(io.Discard, br)
	}()
	return s
}

// ends reports whether the stream ends (EOF) within the deadline; a stream
// that goes on past it is still open.
func ends(t *testing.T, s *liveStream, within time.Duration) bool {
	t.Helper()
	select {
	case <-s.done:
		return true
	case <-time.After(within):
		return false
	}
}

// Sign-out used to leave the session's live streams sending record ids
// and counts: now it ends them, and only them.
func TestSignOutEndsItsLiveStreams(t *testing.T) {
	e := newEnv(t).with(t, func(c *server.Config) { c.Dashboard = streamDashboard{} })
	cookie, csrf, resp := signIn(t, e, viewerKey)
	require.Equal(t, http.StatusOK, resp.status)
	other, _, _ := signIn(t, e, viewerKey)
	mine := openStream(t, e.http.URL, "Cookie", cookie)
	theirs := openStream(t, e.http.URL, "Cookie", other)
	bearer := openStream(t, e.http.URL, "Authorization", "Bearer "+viewerKey)

	got := e.do(t, "DELETE", "/ui/v1/session", "", nil, "Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, csrf)
	require.Equal(t, http.StatusNoContent, got.status)
	assert.True(t, ends(t, mine, 10*time.Second), "the signed-out session's stream ends")
	assert.False(t, ends(t, theirs, 300*time.Millisecond), "another session of the same token streams on")
	assert.False(t, ends(t, bearer, 300*time.Millisecond), "a bearer stream streams on")
}

// Revoking a token (the tokens file re-read without it) ends its sessions
// and its live streams at once, whether they came with the cookie or the
// bearer token; another token's are untouched.
func TestRevokedTokenEndsSessionsAndStreams(t *testing.T) {
	base := newEnv(t)
	e := base.with(t, func(c *server.Config) { c.Dashboard = streamDashboard{} })
	s := server.New(e.cfg)
	e.http = httptest.NewServer(s.Handler())
	t.Cleanup(e.http.Close)
	cookie, _, _ := signIn(t, e, viewerKey)
	opCookie, _, _ := signIn(t, e, operatorKey)
	viaCookie := openStream(t, e.http.URL, "Cookie", cookie)
	viaBearer := openStream(t, e.http.URL, "Authorization", "Bearer "+viewerKey)
	operator := openStream(t, e.http.URL, "Cookie", opCookie)

	onlyBob, err := server.ParseTokens("bob:operator:" + operatorKey)
	require.NoError(t, err)
	require.NoError(t, s.SetTokens(t.Context(), onlyBob))
	assert.True(t, ends(t, viaCookie, 10*time.Second), "the revoked token's session stream ends")
	assert.True(t, ends(t, viaBearer, 10*time.Second), "the revoked token's bearer stream ends")
	assert.False(t, ends(t, operator, 300*time.Millisecond), "the operator's stream goes on")
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie).status)
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/count", viewerKey, nil).status)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", opCookie).status)

	// A changed role or secret revokes too.
	demoted, err := server.ParseTokens("bob:viewer:" + operatorKey)
	require.NoError(t, err)
	require.NoError(t, s.SetTokens(t.Context(), demoted))
	assert.True(t, ends(t, operator, 10*time.Second), "a token whose role changed is revoked")
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", opCookie).status)
}

// Finding 1 of "authentication never falls open": no tokens on a server
// that authenticates would switch authentication off. SetTokens refuses
// it and keeps the last good tokens, on a server that started with tokens
// and on one that started without (tokenless mode is decided at start-up
// only, and ends for good once tokens come).
func TestNoTokensNeverSwitchAuthenticationOff(t *testing.T) {
	base := newEnv(t)
	s := server.New(base.cfg)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	e := base.with(t, func(*server.Config) {})
	e.http = srv
	require.ErrorIs(t, s.SetTokens(t.Context(), nil), server.ErrNoCredentials)
	assert.Equal(t, uint64(1), s.RefusedTokenChanges())
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/count", "", nil).status, "still authenticated")
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", viewerKey, nil).status, "by the last good tokens")

	open := base.with(t, func(c *server.Config) { c.Tokens = nil })
	local := server.New(open.cfg)
	open.http = httptest.NewServer(local.Handler())
	t.Cleanup(open.http.Close)
	assert.Equal(t, http.StatusOK, open.do(t, "GET", "/api/v1/count", "", nil).status, "tokenless from the start")
	require.NoError(t, local.SetTokens(t.Context(), nil), "no change")
	tokens, err := server.ParseTokens("bob:viewer:" + viewerKey)
	require.NoError(t, err)
	require.NoError(t, local.SetTokens(t.Context(), tokens))
	assert.Equal(t, http.StatusUnauthorized, open.do(t, "GET", "/api/v1/count", "", nil).status, "tokens came: no longer tokenless")
	require.ErrorIs(t, local.SetTokens(t.Context(), nil), server.ErrNoCredentials)
	assert.Equal(t, http.StatusUnauthorized, open.do(t, "GET", "/api/v1/count", "", nil).status, "and never again")
}

// sharedServer is one of several servers on the same session bucket.
type sharedServer struct {
	s    *server.Server
	http *httptest.Server
}

func startShared(t *testing.T, e *env, kv jetstream.KeyValue) sharedServer {
	t.Helper()
	cfg := e.cfg
	cfg.Dashboard = streamDashboard{}
	cfg.Sessions = kv
	s := server.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	h := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		h.Close()
		cancel()
		require.NoError(t, <-done)
	})
	return sharedServer{s: s, http: h}
}

func doAt(t *testing.T, base, method, path string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// Sessions used to live in one process's memory: a restart, or a second
// serve behind a load balancer, signed everyone out. In the shared bucket
// a session made on one server works on another and on a new one, and a
// sign-out on one ends its streams on the others.
func TestSharedSessionsSurviveARestartAndEndEverywhere(t *testing.T) {
	e := newEnv(t)
	kv, err := server.OpenSessions(t.Context(), e.js, 1)
	require.NoError(t, err)
	a := startShared(t, e, kv)
	b := startShared(t, e, kv)

	resp, err := http.Post(a.http.URL+"/ui/v1/session", "application/json", strings.NewReader(`{"token":"`+viewerKey+`"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == server.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	require.NotEmpty(t, cookie)
	assert.Equal(t, http.StatusOK, doAt(t, b.http.URL, "GET", "/ui/v1/session", "Cookie", cookie).StatusCode, "the other server knows the session")
	c := startShared(t, e, kv) // a restarted server
	assert.Equal(t, http.StatusOK, doAt(t, c.http.URL, "GET", "/api/v1/count", "Cookie", cookie).StatusCode, "a new server knows it too")

	onA := openStream(t, a.http.URL, "Cookie", cookie)
	onC := openStream(t, c.http.URL, "Cookie", cookie)
	// Sign out on b: read the CSRF token there first.
	var info server.SessionInfo
	req, _ := http.NewRequestWithContext(t.Context(), "GET", b.http.URL+"/ui/v1/session", nil)
	req.Header.Set("Cookie", cookie)
	got, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	(response{body: mustRead(t, got)}).json(t, &info)
	out := doAt(t, b.http.URL, "DELETE", "/ui/v1/session", "Cookie", cookie, "Origin", b.http.URL, server.CSRFHeader, info.CSRF)
	require.Equal(t, http.StatusNoContent, out.StatusCode)
	assert.True(t, ends(t, onA, 10*time.Second), "the stream on server a ends with the sign-out on b")
	assert.True(t, ends(t, onC, 10*time.Second), "and on server c")
	assert.Equal(t, http.StatusUnauthorized, doAt(t, a.http.URL, "GET", "/ui/v1/session", "Cookie", cookie).StatusCode)

	// The bucket holds no secret: keys are hashes, values name the
	// principal.
	keys, err := kv.ListKeys(t.Context())
	require.NoError(t, err)
	for k := range keys.Keys() {
		assert.NotContains(t, cookie, strings.TrimPrefix(k, "s_"), "the key is not the session id")
	}
}

func mustRead(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// A bad entry in the session bucket (written by something else) signs
// nobody in and stops nothing.
func TestSessionBucketEntriesAreValidated(t *testing.T) {
	e := newEnv(t)
	kv, err := server.OpenSessions(t.Context(), e.js, 1)
	require.NoError(t, err)
	a := startShared(t, e, kv)
	// A well-formed id whose entry is forged: an operator for a day.
	id := strings.Repeat("A", 43)
	key := sessionKeyOf(id)
	now := time.UnixMilli(t0)
	for _, v := range []string{
		fmt.Sprintf(`{"v":1,"name":"mallory","role":"operator","via":"token","created":%d,"expires":%d}`, now.UnixMilli(), now.Add(24*time.Hour).UnixMilli()),
		fmt.Sprintf(`{"v":1,"name":"mallory","role":"root","via":"token","created":%d,"expires":%d}`, now.UnixMilli(), now.Add(time.Hour).UnixMilli()),
		fmt.Sprintf(`{"v":1,"name":"mallory","role":"operator","via":"token","created":%d,"expires":%d,"admin":true}`, now.UnixMilli(), now.Add(time.Hour).UnixMilli()),
		`not json`,
	} {
		_, err := kv.Put(t.Context(), key, []byte(v))
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, doAt(t, a.http.URL, "GET", "/api/v1/count", "Cookie", server.SessionCookie+"="+id).StatusCode, "entry %s", v)
	}
	// A valid entry of a token the server does not hold signs nobody in
	// either.
	_, err = kv.Put(t.Context(), key, []byte(fmt.Sprintf(`{"v":1,"name":"mallory","role":"operator","via":"token","created":%d,"expires":%d}`, now.UnixMilli(), now.Add(time.Hour).UnixMilli())))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, doAt(t, a.http.URL, "GET", "/api/v1/count", "Cookie", server.SessionCookie+"="+id).StatusCode, "no token mallory")
	// The server still works.
	assert.Equal(t, http.StatusOK, doAt(t, a.http.URL, "GET", "/api/v1/count", "Authorization", "Bearer "+viewerKey).StatusCode)
}

// sessionKeyOf is the bucket key of a session id (the server's scheme:
// "s_" and the SHA-256 of the id in hex).
func sessionKeyOf(id string) string {
	return "s_" + sha256Hex(id)
}

func openAudit(t *testing.T, e *env) *audit.Log {
	t.Helper()
	l, err := audit.Open(t.Context(), e.js, audit.Config{Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	return l
}

// Failed authentications used to be unlimited (10 001 sign-ins in 4.9 s):
// now a client address that spends its budget is refused with 429 and
// Retry-After, whatever it sends, and it is logged and audited once; other
// addresses are not affected, and the budget refills with time.
func TestFailedAuthenticationsAreRateLimited(t *testing.T) {
	logs := &testlog.Buffer{}
	e := newEnv(t)
	al := openAudit(t, e)
	e = e.with(t, func(c *server.Config) {
		c.Dashboard = stubDashboard{}
		c.Audit = al
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		c.AuthLimits = server.AuthLimits{Failures: 5, FailureEvery: 10 * time.Second}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	for i := range 5 {
		r := e.do(t, "GET", "/api/v1/count", "wrong-token-0123456789", nil, from("203.0.113.7")...)
		require.Equal(t, http.StatusUnauthorized, r.status, "failure %d", i+1)
	}
	for _, c := range []struct {
		name, method, path, token string
		body                      any
	}{
		{"a wrong token", "GET", "/api/v1/count", "wrong-token-0123456789", nil},
		{"the right token", "GET", "/api/v1/count", viewerKey, nil},
		{"a sign-in", "POST", "/ui/v1/session", "", map[string]string{"token": viewerKey}},
	} {
		r := e.do(t, c.method, c.path, c.token, c.body, from("203.0.113.7")...)
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s from the blocked address: %s", c.name, r.body)
		assert.Equal(t, "10", r.header.Get("Retry-After"), c.name)
		assert.Equal(t, "TooManyRequests", r.apiError(t).Code)
	}
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", viewerKey, nil, from("203.0.113.8")...).status, "another address is served")
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/healthz", "", nil, from("203.0.113.7")...).status, "probes need no authentication")
	assert.Equal(t, 1, strings.Count(logs.String(), "too many failures"), "one log line per block: %s", logs.String())
	assert.Contains(t, logs.String(), "client=203.0.113.7")

	e.clock.SetMillis(t0 + 10_000)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", viewerKey, nil, from("203.0.113.7")...).status, "the budget refills")

	// An IPv6 client is one /64.
	for range 5 {
		e.do(t, "GET", "/api/v1/count", "wrong-token-0123456789", nil, from("2001:db8:1:2::1")...)
	}
	assert.Equal(t, http.StatusTooManyRequests, e.do(t, "GET", "/api/v1/count", viewerKey, nil, from("2001:db8:1:2:ffff::9")...).status)

	page, err := al.Query(t.Context(), audit.Query{Kind: api.AuditAuthFailure})
	require.NoError(t, err)
	assert.Len(t, page.Entries, 10, "every failure is audited")
	assert.Equal(t, "203.0.113.7", page.Entries[0].Client, "with the forwarded client address")
	assert.Equal(t, "unknown token", page.Entries[0].Reason)
	assert.Equal(t, "GET /api/v1/count", page.Entries[0].Route)
	blocked, err := al.Query(t.Context(), audit.Query{Kind: api.AuditRateLimited})
	require.NoError(t, err)
	assert.Len(t, blocked.Entries, 2, "each block is audited once")
}

// A principal's sign-ins are limited too, so that no token can fill the
// session store.
func TestSignInsPerPrincipalAreLimited(t *testing.T) {
	e := newEnv(t).with(t, func(c *server.Config) {
		c.Dashboard = stubDashboard{}
		c.AuthLimits = server.AuthLimits{SignIns: 3, SignInEvery: time.Minute}
	})
	for range 3 {
		_, _, r := signIn(t, e, viewerKey)
		require.Equal(t, http.StatusOK, r.status)
	}
	_, _, r := signIn(t, e, viewerKey)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "60", r.header.Get("Retry-After"))
	_, _, r = signIn(t, e, operatorKey)
	assert.Equal(t, http.StatusOK, r.status, "another principal signs in")
}

// The audit log is queryable by operators: by kind, actor and time.
func TestAuditLogIsQueryable(t *testing.T) {
	e := newEnv(t)
	al := openAudit(t, e)
	e = e.with(t, func(c *server.Config) { c.Audit = al; c.Dashboard = stubDashboard{} })
	_, _, _ = signIn(t, e, viewerKey)
	_, _, _ = signIn(t, e, "not-a-token-at-all-0123")
	r := e.do(t, "GET", "/api/v1/audit?kind=sign_in", operatorKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var page api.AuditPage
	r.json(t, &page)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, "alice", page.Entries[0].Actor)
	assert.Equal(t, "viewer", page.Entries[0].Role)
	assert.Equal(t, "token", page.Entries[0].Reason)
	r = e.do(t, "GET", "/api/v1/audit?limit=1", operatorKey, nil)
	r.json(t, &page)
	require.Len(t, page.Entries, 1)
	require.NotEmpty(t, page.Next)
	r = e.do(t, "GET", "/api/v1/audit?cursor="+page.Next, operatorKey, nil)
	r.json(t, &page)
	assert.Len(t, page.Entries, 1, "the failed sign-in")
	assert.Equal(t, "auth_failure", string(page.Entries[0].Kind))
	assert.Equal(t, http.StatusForbidden, e.do(t, "GET", "/api/v1/audit", viewerKey, nil).status, "viewers do not read the audit log")
	for q, field := range map[string]string{"kind=nope": "kind", "from=monday": "from", "limit=0": "limit", "x=1": "x"} {
		r := e.do(t, "GET", "/api/v1/audit?"+q, operatorKey, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, q)
		assert.Equal(t, field, r.apiError(t).Details["field"], q)
	}
	assert.Equal(t, http.StatusNotFound, newEnv(t).do(t, "GET", "/api/v1/audit", operatorKey, nil).status, "no audit log configured")
}

// Behind a trusted proxy, X-Forwarded-Proto https makes cookies Secure
// and answers carry HSTS; the same headers from any other peer are
// ignored.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	base := newEnv(t)
	trusted := withDashboard(t, base.with(t, func(c *server.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}), true)
	untrusted := withDashboard(t, base.with(t, func(c *server.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	}), true)
	https := []string{"X-Forwarded-Proto", "https", "X-Forwarded-For", "198.51.100.1"}
	r := trusted.do(t, "POST", "/ui/v1/session", "", map[string]string{"token": viewerKey}, append([]string{"Origin", trusted.http.URL}, https...)...)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.header.Get("Set-Cookie"), "Secure")
	assert.Equal(t, fmt.Sprintf("max-age=%d", server.HSTSMaxAge), r.header.Get("Strict-Transport-Security"))
	r = untrusted.do(t, "POST", "/ui/v1/session", "", map[string]string{"token": viewerKey}, append([]string{"Origin", untrusted.http.URL}, https...)...)
	require.Equal(t, http.StatusOK, r.status)
	assert.NotContains(t, r.header.Get("Set-Cookie"), "Secure", "an untrusted peer's X-Forwarded-Proto is ignored")
	assert.Empty(t, r.header.Get("Strict-Transport-Security"))
}

// A body that dribbles in used to hold its connection as long as the
// client liked; now it is answered 408 after the body timeout.
func TestSlowBodyIsARequestTimeout(t *testing.T) {
	e := newEnv(t).with(t, func(c *server.Config) { c.BodyTimeout = 300 * time.Millisecond })
	id := e.create(t, 1, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	_, err = fmt.Fprintf(c, "POST /api/v1/records/%s/mark_recoverable HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{", id, operatorKey)
	require.NoError(t, err)
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"field":"body"`)
	assert.Less(t, time.Since(start), 15*time.Second)

	// A request refused before its body is read (here: its Host) does not
	// wait for the body either.
	c2, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	require.NoError(t, err)
	defer c2.Close()
	require.NoError(t, c2.SetDeadline(time.Now().Add(20*time.Second)))
	_, err = fmt.Fprintf(c2, "POST /api/v1/records/%s/mark_recoverable HTTP/1.1\r\nHost: rebind.attacker.example\r\nContent-Length: 60000\r\n\r\n{", id)
	require.NoError(t, err)
	resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
	require.NoError(t, err, "the refusal is sent once the body's deadline passed")
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
}
