package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/testissuer"
	"github.com/amends-dev/amends/server"
)

// FuzzHandler sends the server's handler arbitrary requests (method, path,
// query, headers, body, and no, a viewer's or an operator's token, over
// plain HTTP or TLS) against a real JetStream, one server per fuzz process,
// with the dashboard's routes, sessions, trusted proxies and an OIDC
// issuer, and checks that no request gets a 5xx other than the documented
// 503, panics, takes the NATS connection or the index's watch down, or gets
// an error body other than {code, message, details} with details.field on
// every 400, 413, 415 and 421, and Retry-After on every 429. The headers
// may set Host, X-Forwarded-For and -Proto, Cookie (session ids),
// Authorization (JWT-shaped or not), Origin, Sec-Fetch-Site and
// X-CSRF-Token.
//
// It is one function (gocyclo 37) on purpose: the fuzz target must hold
// every check a response gets in the one callback the fuzzer runs, next
// to the environment it builds once.
func FuzzHandler(f *testing.F) {
	base := newEnv(f)
	id := base.create(f, 1, nil)
	base.create(f, 2, nil)
	iss := testissuer.Start(f, nil)
	jwt := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour)
	e := base.with(f, func(c *server.Config) {
		c.Dashboard = stubDashboard{}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		c.AuthLimits = server.AuthLimits{Failures: 1 << 30} // never blocks the fuzzer's own address
		c.OIDC = &server.OIDCConfig{Issuer: iss.URL, Audience: apiAudience, ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, HTTPClient: iss.Server.Client()}
	})
	cookie, csrf, signed := signIn(f, e, operatorKey)
	require.Equal(f, http.StatusOK, signed.status)
	long := strings.Repeat("a", 4000)
	for _, s := range []struct {
		method, path, query, header, body string
		token                             byte
	}{
		{"GET", "/api/v1/records/" + long, "", "", "", 1},
		{"GET", "/api/v1/records/" + long + "/history", "", "", "", 1},
		{"GET", "/api/v1/records/" + id, "", "", "", 1},
		{"GET", "/api/v1/records/" + id + "/history", "x=1", "", "", 1},
		{"GET", "/api/v1/records/a\x00b", "", "", "", 0},
		{"GET", "/api/v1/records", "status=FAILED&status=PREPARED&cursor=garbage", "", "", 1},
		{"GET", "/api/v1/records", "limit=0&sort=color&order=up", "", "", 2},
		{"GET", "/api/v1/records", "processor=" + long, "", "", 1},
		{"GET", "/api/v1/views/to-retry", "executeAtFrom=monday", "", "", 1},
		{"GET", "/api/v1/count", "minRetries=99999999999", "", "", 1},
		{"GET", "/api/v1/summary", "%zz=1", "", "", 1},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", "", "Content-Type: application/json\nIdempotency-Key: k1", "{}", 2},
		{"POST", "/api/v1/records/" + id + "/mark_recoverable", "", "Content-Type: application/json\nIdempotency-Key: k1", `{"recoverable":"UNRECOVERABLE"}`, 2},
		{"POST", "/api/v1/records/" + id + "/mark_recoverable", "", "Content-Type: application/json", `{"recoverable":5}`, 2},
		{"POST", "/api/v1/records/" + id + "/apply_retry_spec", "", "Content-Type: application/json", `{"maxRetries":1,"minBackoff":1,"executionTimeout":0}`, 2},
		{"POST", "/api/v1/records/" + id + "/apply_retry_spec", "", "Content-Type: application/json", `{"maxRetries":2147483647,"minBackoff":2147483647,"executionTimeout":2147483647}`, 2},
		{"POST", "/api/v1/records/" + id + "/change_function", "", "Content-Type: application/json", `{"functionKind":"EVENT","contextName":"x","processorName":"y","name":"z","reason":"r","extra":1}`, 2},
		{"POST", "/api/v1/records/" + id + "/force_prepare_compensation", "", "Content-Type: text/plain", `{"reason":"r"}`, 2},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", "", "Content-Type: application/json", `{} []`, 2},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", "", "Idempotency-Key: " + long, "", 2},
		{"POST", "/api/v1/records/" + long + "/prepare_compensation", "", "", "", 2},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", "", "", "", 1},
		{"POST", "/api/v1/batch/prepare_compensation", "", "Content-Type: application/json", `{"dryRun":true,"filter":{"status":5}}`, 2},
		{"POST", "/api/v1/batch/force_prepare_compensation", "", "Content-Type: application/json", `{"requestId":"r1","reason":"x","ratePerSecond":1000}`, 2},
		{"DELETE", "/api/v1/records/" + id, "", "", "", 2},
		{"POST", "/healthz", "", "", "", 0},
		{"GET", "/metrics", "", "Authorization: bearer " + viewerKey, "", 0},
		{"GET", "/api/v1/openapi.json", "", "", "", 0},
		{"GET", "/../api/v1/records", "", "", "", 1},
		{"GET", "/api/v1/records", "", "Host: rebind.attacker.example:8080", "", 0},
		{"GET", "/api/v1/records", "", "Host: [::1]:8080\nX-Forwarded-For: 203.0.113.9, 10.0.0.1\nX-Forwarded-Proto: https", "", 0x11},
		{"POST", "/ui/v1/session", "", "Content-Type: application/json\nOrigin: http://amends.test\nX-Forwarded-For: garbage", `{"token":"` + operatorKey + `"}`, 0x10},
		{"DELETE", "/ui/v1/session", "", "Cookie: amends_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nOrigin: http://amends.test\nX-CSRF-Token: x", "", 0},
		{"GET", "/ui/v1/live", "", "Authorization: Bearer " + jwt, "", 0},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", "", "Cookie: " + cookie + "\nOrigin: http://amends.test\nX-CSRF-Token: " + csrf, "", 0},
		{"POST", "/api/v1/records/" + id + "/prepare_compensation", "", "Cookie: " + cookie + "\nOrigin: http://amends.test\nSec-Fetch-Site: cross-site\nX-CSRF-Token: " + csrf, "", 0x10},
		{"GET", "/api/v1/count", "", "Authorization: Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "", 0},
		{"GET", "/api/v1/count", "", "Authorization: Bearer a.b.c", "", 0x10},
		{"GET", "/ui/v1/oidc/callback", "state=x&code=y", "Cookie: amends_oidc=a.b.c.d", "", 0},
		{"GET", "/ui/v1/oidc/start", "next=//evil.example", "", "", 0},
		{"GET", "/api/v1/audit", "kind=sign_in&from=0&limit=5", "", "", 2},
		{"POST", "/api/v1/records/" + id + "/force_prepare_compensation", "", "Content-Type: application/json; charset=latin1", `{"reason":"r"}`, 2},
		{"POST", "/api/v1/records/" + id + "/mark_recoverable", "", "Content-Type: application/json\nTraceparent: garbage", `{"recoverable":"RECOVERABLE","recoverable":"UNKNOWN"}`, 2},
		{"POST", "/api/v1/records/" + id + "/force_prepare_compensation", "", "Content-Type: application/json", "{\"reason\":\"\u202e\\ud800\"}", 2},
	} {
		f.Add(s.method, s.path, s.query, s.header, []byte(s.body), s.token)
	}
	f.Fuzz(func(t *testing.T, method, path, query, header string, body []byte, token byte) {
		if !validToken(method) || strings.ContainsAny(query, " \r\n#") {
			return // not a request an HTTP server would pass on
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		h := http.Header{}
		host := "amends.test"
		for line := range strings.SplitSeq(header, "\n") {
			name, value, ok := strings.Cut(line, ":")
			value = strings.TrimSpace(value)
			if !ok || !validToken(name) || strings.ContainsAny(value, "\r\n\x00") {
				continue
			}
			if strings.EqualFold(name, "Host") {
				host = value
				continue
			}
			h.Add(name, value)
		}
		switch (token & 0x0f) % 3 {
		case 1:
			h.Set("Authorization", "Bearer "+viewerKey)
		case 2:
			h.Set("Authorization", "Bearer "+operatorKey)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := (&http.Request{
			Method: method, URL: &url.URL{Path: path, RawQuery: query}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Host: host,
			RemoteAddr: "127.0.0.1:1234", RequestURI: path,
		}).WithContext(ctx)
		if token&0x10 != 0 {
			req.TLS = &tls.ConnectionState{HandshakeComplete: true, Version: tls.VersionTLS13}
		}
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)

		res := rec.Result()
		out := rec.Body.Bytes()
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s %q: %d without X-Content-Type-Options: nosniff", method, path, res.StatusCode)
		}
		if (req.TLS != nil) != (res.Header.Get("Strict-Transport-Security") != "") && h.Get("X-Forwarded-Proto") == "" {
			t.Fatalf("%s %q: HSTS %q over TLS %v", method, path, res.Header.Get("Strict-Transport-Security"), req.TLS != nil)
		}
		if res.StatusCode >= 500 {
			var eb api.Error
			_ = json.Unmarshal(out, &eb)
			if res.StatusCode != http.StatusServiceUnavailable || (eb.Code != "Unavailable" && eb.Code != "NotReady") {
				t.Fatalf("%s %q?%q: %d %s", method, path, query, res.StatusCode, out)
			}
		}
		e.healthy(t)
		if res.StatusCode < 400 {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(out, &raw); err != nil {
			t.Fatalf("%s %q: %d with a body that is not a JSON object: %q", method, path, res.StatusCode, out)
		}
		for k := range raw {
			if k != "code" && k != "message" && k != "details" {
				t.Fatalf("%s %q: %d body has %q; want only code, message, details: %s", method, path, res.StatusCode, k, out)
			}
		}
		var eb api.Error
		if err := json.Unmarshal(out, &eb); err != nil || eb.Code == "" || eb.Message == "" {
			t.Fatalf("%s %q: %d body without code or message: %s", method, path, res.StatusCode, out)
		}
		for _, leak := range []string{"Go struct", "json: ", "projection: ", "eventstore: ", "aggregate."} {
			if strings.Contains(eb.Message, leak) {
				t.Fatalf("%s %q: message shows %q: %s", method, path, leak, eb.Message)
			}
		}
		switch res.StatusCode {
		case http.StatusTooManyRequests:
			if res.Header.Get("Retry-After") == "" {
				t.Fatalf("%s %q: 429 without Retry-After", method, path)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusMisdirectedRequest:
			if f, _ := eb.Details["field"].(string); f == "" {
				t.Fatalf("%s %q?%q: %d names no field: %s", method, path, query, res.StatusCode, out)
			}
		case http.StatusMethodNotAllowed:
			if res.Header.Get("Allow") == "" {
				t.Fatalf("%s %q: 405 without Allow", method, path)
			}
		}
	})
}

// validToken reports whether s is an HTTP token (a method or header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
