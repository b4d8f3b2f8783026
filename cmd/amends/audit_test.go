package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/server"
)

// amends audit reads serve's audit log: a refused token shows with the
// client and the reason; a viewer may not read it.
func TestAuditShowsRefusedCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	ops, watcher := server.NewSecret(), server.NewSecret()
	require.NoError(t, os.WriteFile(file, []byte(server.TokenLine("ops", server.RoleOperator, ops, time.Time{})+"\n"+
		server.TokenLine("watcher", server.RoleViewer, watcher, time.Time{})+"\n"), 0o600))
	var s cli
	r := s.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tokens-file", file, "--scheduler=false")
	req, _ := http.NewRequestWithContext(t.Context(), "GET", r.info.HTTPURL+"/api/v1/count", nil)
	req.Header.Set("Authorization", "Bearer not-a-token-of-this-server")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	c := cli{env: map[string]string{"AMENDS_SERVER": r.info.HTTPURL, "AMENDS_TOKEN": ops}}
	require.Equal(t, exitOK, c.run(t, "audit", "--kind", "auth_failure"), c.stderr.String())
	out := c.stdout.String()
	assert.Contains(t, out, "auth_failure")
	assert.Contains(t, out, "127.0.0.1")
	assert.Contains(t, out, "unknown token")
	assert.Regexp(t, `auth_failure +- +token `, out, "the kind of credential refused")
	assert.Contains(t, out, "GET /api/v1/count")
	assert.NotContains(t, out, "not-a-token-of-this-server", "the refused secret is never recorded")

	var j cli
	j.env = c.env
	require.Equal(t, exitOK, j.run(t, "audit", "-o", "json"))
	var page listJSON[api.AuditEntry]
	require.NoError(t, json.Unmarshal([]byte(j.stdout.String()), &page))
	require.NotEmpty(t, page.Items)

	v := cli{env: map[string]string{"AMENDS_SERVER": r.info.HTTPURL, "AMENDS_TOKEN": watcher}}
	assert.Equal(t, exitFailure, v.run(t, "audit"))
	assert.Contains(t, v.stderr.String(), "operator")
	var bad cli
	bad.env = c.env
	assert.Equal(t, exitUsage, bad.run(t, "audit", "--kind", "everything"))
	assert.True(t, strings.Contains(bad.stderr.String(), "auth_failure"), bad.stderr.String())
	require.Equal(t, exitOK, r.stop(t))
}

// A credential the server refuses (none, unknown) exits 3, its own code,
// so that a script can tell "sign in again" from another failure; a
// token without the role a command needs (403) exits 1 like any failure.
func TestARefusedCredentialHasItsOwnExitCode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	watcher := server.NewSecret()
	require.NoError(t, os.WriteFile(file, []byte(server.TokenLine("watcher", server.RoleViewer, watcher, time.Time{})+"\n"), 0o600))
	var s cli
	r := s.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tokens-file", file, "--scheduler=false")
	for name, c := range map[string]struct {
		token string
		args  []string
		code  int
		msg   string
	}{
		"no token":       {"", []string{"list"}, exitUnauthenticated, "missing bearer token"},
		"unknown token":  {"amends_not-a-token-of-this-server-0123456789", []string{"list"}, exitUnauthenticated, "unknown bearer token"},
		"viewer's token": {watcher, []string{"audit"}, exitFailure, "operator"},
		"a good token":   {watcher, []string{"list"}, exitOK, ""},
	} {
		env := map[string]string{"AMENDS_SERVER": r.info.HTTPURL}
		if c.token != "" {
			env["AMENDS_TOKEN"] = c.token
		}
		cl := cli{env: env}
		assert.Equal(t, c.code, cl.run(t, c.args...), "%s: %s", name, cl.stderr.String())
		assert.Contains(t, cl.stderr.String(), c.msg, name)
	}
	require.Equal(t, exitOK, r.stop(t))
}
