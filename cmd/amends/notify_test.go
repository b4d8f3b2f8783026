package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/notify"
)

const notifySecret = "cli-test-secret-0123456789"

// checkSignature is the receiver's check written out without the notify
// package: HMAC-SHA256 over method, path, query, timestamp, event id and
// the body's SHA-256, one line each.
func checkSignature(secret string, r *http.Request, body []byte) bool {
	sum := sha256.Sum256(body)
	msg := strings.Join([]string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Amends-Timestamp"), r.Header.Get("Amends-Event-Id"), hex.EncodeToString(sum[:])}, "\n")
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Split(r.Header.Get("Amends-Signature"), ",") {
		if strings.TrimSpace(s) == want {
			return true
		}
	}
	return false
}

// capture writes a signed request as "nc -l" would save it.
func capture(t *testing.T, secret string, ts int64, body string) string {
	t.Helper()
	hash := notify.BodyHash([]byte(body))
	sig := notify.Sign([]byte(secret), "POST", "/hooks/amends", "team=ops", ts, "evt-1", hash)
	req := fmt.Sprintf("POST /hooks/amends?team=ops HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Amends-Event-Id: evt-1\r\nAmends-Event-Type: created\r\nAmends-Record-Id: r-1\r\nAmends-Timestamp: %d\r\nAmends-Body-Sha256: %s\r\nAmends-Signature: %s\r\n\r\n%s",
		len(body), ts, hash, sig, body)
	p := filepath.Join(t.TempDir(), "request.txt")
	require.NoError(t, os.WriteFile(p, []byte(req), 0o600))
	return p
}

func TestNotifyVerify(t *testing.T) {
	now := time.UnixMilli(t0).Unix()
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(notifySecret+"\n"), 0o600))

	var c cli
	c.env = map[string]string{"HOOK_SECRET": notifySecret, "OLD_SECRET": "old-secret-0123456789"}
	good := capture(t, notifySecret, now, `{"id":"evt-1"}`)
	require.Equal(t, exitOK, c.run(t, "notify", "verify", "--request", good, "--secret-env", "HOOK_SECRET"), "stderr: %s", c.stderr.String())
	assert.Contains(t, c.stdout.String(), "valid: event evt-1 (created), record r-1")

	var rot cli
	rot.env = c.env
	require.Equal(t, exitOK, rot.run(t, "notify", "verify", "--request", good, "--secret-env", "OLD_SECRET", "--secret-file", secretFile), "either of two secrets verifies: %s", rot.stderr.String())

	for name, tc := range map[string]struct {
		request string
		args    []string
		want    string
	}{
		"wrong secret":    {good, []string{"--secret-env", "OLD_SECRET"}, "no signature in Amends-Signature matches a secret"},
		"stale timestamp": {capture(t, notifySecret, now-600, `{"id":"evt-1"}`), []string{"--secret-env", "HOOK_SECRET"}, "beyond the tolerance of 5m0s"},
		"changed body":    {changedBody(t, good), []string{"--secret-env", "HOOK_SECRET"}, "the body was changed"},
	} {
		t.Run(name, func(t *testing.T) {
			var b cli
			b.env = c.env
			code := b.run(t, append([]string{"notify", "verify", "--request", tc.request}, tc.args...)...)
			assert.Equal(t, exitFailure, code)
			assert.True(t, strings.HasPrefix(b.stderr.String(), "amends: invalid: "), "%s", b.stderr.String())
			assert.Contains(t, b.stderr.String(), tc.want)
			assert.NotContains(t, b.stderr.String(), notifySecret)
			assert.NotContains(t, b.stderr.String(), "signature does not verify", "no sentinel text")
		})
	}
	var u cli
	assert.Equal(t, exitUsage, u.run(t, "notify", "verify", "--request", good))
	assert.Contains(t, u.stderr.String(), "a secret is required")
}

func changedBody(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data = bytes.Replace(data, []byte(`"evt-1"}`), []byte(`"evt-2"}`), 1)
	p := filepath.Join(t.TempDir(), "changed.txt")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func TestNotifyTestSendsASignedNotification(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var ok []bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r)
		ok = append(ok, checkSignature(notifySecret, r, body))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("thanks"))
	}))
	t.Cleanup(srv.Close)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	url := "http://localhost:" + port + "/hook"

	var c cli
	c.env = map[string]string{"HOOK_SECRET": notifySecret}
	code := c.run(t, "notify", "test", "default", "--notify-url", url, "--notify-secret-env", "HOOK_SECRET", "--notify-allow-host", "localhost")
	require.Equal(t, exitOK, code, "stderr: %s", c.stderr.String())
	assert.Contains(t, c.stdout.String(), "to default: HTTP 202 Accepted")
	assert.Contains(t, c.stdout.String(), "thanks")
	mu.Lock()
	require.Len(t, got, 1)
	assert.True(t, ok[0], "the receiver verifies the signature")
	assert.Equal(t, "test", got[0].Header.Get("Amends-Event-Type"))
	mu.Unlock()

	// Without the allow-list the guard refuses loopback.
	var r cli
	r.env = c.env
	code = r.run(t, "notify", "test", "default", "--notify-url", url, "--notify-secret-env", "HOOK_SECRET")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, r.stderr.String(), "loopback")
	assert.NotContains(t, r.stderr.String(), notifySecret)

	var n cli
	n.env = c.env
	assert.Equal(t, exitUsage, n.run(t, "notify", "test", "ops", "--notify-url", url, "--notify-secret-env", "HOOK_SECRET"))
	assert.Contains(t, n.stderr.String(), `no endpoint is named "ops"; the endpoints are default`)
}
