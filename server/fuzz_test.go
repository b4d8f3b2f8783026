package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amends-dev/amends/server"
)

// FuzzHandler sends the server's handler arbitrary requests (method, path,
// query, headers, body, and no, a viewer's or an operator's token) against a
// real JetStream, one server per fuzz process, and checks that no request
// gets a 5xx other than the documented 503, panics, takes the NATS
// connection or the index's watch down, or gets an error body other than
// {code, message, details} with details.field on every 400, 413 and 415.
func FuzzHandler(f *testing.F) {
	e := newEnv(f)
	id := e.create(f, 1, nil)
	e.create(f, 2, nil)
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
		for line := range strings.SplitSeq(header, "\n") {
			name, value, ok := strings.Cut(line, ":")
			value = strings.TrimSpace(value)
			if !ok || !validToken(name) || strings.ContainsAny(value, "\r\n\x00") {
				continue
			}
			h.Add(name, value)
		}
		switch token % 3 {
		case 1:
			h.Set("Authorization", "Bearer "+viewerKey)
		case 2:
			h.Set("Authorization", "Bearer "+operatorKey)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := (&http.Request{
			Method: method, URL: &url.URL{Path: path, RawQuery: query}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Host: "amends.test",
			RemoteAddr: "127.0.0.1:1234", RequestURI: path,
		}).WithContext(ctx)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)

		res := rec.Result()
		out := rec.Body.Bytes()
		if res.StatusCode >= 500 {
			var eb server.Error
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
		var eb server.Error
		if err := json.Unmarshal(out, &eb); err != nil || eb.Code == "" || eb.Message == "" {
			t.Fatalf("%s %q: %d body without code or message: %s", method, path, res.StatusCode, out)
		}
		for _, leak := range []string{"Go struct", "json: ", "projection: ", "eventstore: ", "aggregate."} {
			if strings.Contains(eb.Message, leak) {
				t.Fatalf("%s %q: message shows %q: %s", method, path, leak, eb.Message)
			}
		}
		switch res.StatusCode {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
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
