package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/server"
)

// A restart of serve used to sign every browser out (sessions lived in
// its memory): now they are in the shared bucket, and a session made
// before the restart works after it.
func TestServeKeepsSessionsThroughARestart(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "tokens")
	secret := server.NewSecret()
	require.NoError(t, os.WriteFile(file, []byte(server.TokenLine("ada", server.RoleOperator, secret, time.Time{})+"\n"), 0o600))
	args := []string{"serve", "--data-dir", data, "--nats-listen", "127.0.0.1:-1", "--tokens-file", file, "--scheduler=false"}
	var c1 cli
	r := c1.startServe(t, args...)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: waitLimit}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", r.info.HTTPURL+"/ui/v1/session", strings.NewReader(`{"token":"`+secret+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", r.info.HTTPURL)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	u, _ := url.Parse(r.info.HTTPURL)
	cookies := jar.Cookies(u)
	require.NotEmpty(t, cookies)
	require.Equal(t, exitOK, r.stop(t))

	var c2 cli
	r = c2.startServe(t, args...)
	req, _ = http.NewRequestWithContext(t.Context(), "GET", r.info.HTTPURL+"/ui/v1/session", nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the session made before the restart works after it")
	require.Equal(t, exitOK, r.stop(t))
}

// serve answers only the host names it knows: a rebinding page's name is a
// 421, a name given with --http-allowed-host is served.
func TestServeChecksTheHostHeader(t *testing.T) {
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--scheduler=false", "--http-allowed-host", "amends.internal.example")
	get := func(host string) int {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", r.info.HTTPURL+"/api/v1/count", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusMisdirectedRequest, get("rebind.attacker.example"))
	assert.Equal(t, http.StatusOK, get("amends.internal.example"))
	assert.Equal(t, http.StatusOK, get("localhost"))
	assert.Equal(t, http.StatusOK, get(strings.TrimPrefix(r.info.HTTPURL, "http://")))
	require.Equal(t, exitOK, r.stop(t))
	assert.Contains(t, c.stderr.String(), "amends.internal.example")
}
