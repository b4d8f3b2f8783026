package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/server"
)

func TestParseTokens(t *testing.T) {
	tokens, err := server.ParseTokens("# ops\nalice:viewer:0123456789abcdef\n\nbob:operator:fedcba9876543210,carol : viewer : aaaaaaaaaaaaaaaa")
	require.NoError(t, err)
	assert.Equal(t, []server.Token{
		{Name: "alice", Role: server.RoleViewer, Secret: "0123456789abcdef"},
		{Name: "bob", Role: server.RoleOperator, Secret: "fedcba9876543210"},
		{Name: "carol", Role: server.RoleViewer, Secret: "aaaaaaaaaaaaaaaa"},
	}, tokens)
	for text, want := range map[string]string{
		"alice:viewer":                 "token entry 1 is not name:role:secret",
		":viewer:0123456789abcdef":     "token entry 1 has an empty name",
		"alice:admin:0123456789abcdef": `token "alice" has role "admin"; the roles are viewer and operator`,
		"alice:viewer:short":           `token "alice" has a secret of 5 characters; use at least 16`,
		"a:viewer:0123456789abcdef,a:operator:0123456789abcdeg":        `token name "a" appears twice`,
		"ops:operator:0123456789abcdef\nwatch:viewer:0123456789abcdef": `tokens "ops" and "watch" have the same secret`,
	} {
		_, err := server.ParseTokens(text)
		assert.ErrorContains(t, err, want)
		if err != nil {
			assert.NotContains(t, err.Error(), "0123456789abcdef", "errors never show a secret")
		}
	}
}

func TestCheckBind(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.5:8080": false,
	} {
		err := server.CheckBind(addr, nil)
		if ok {
			assert.NoError(t, err, addr)
		} else {
			assert.ErrorIs(t, err, server.ErrInsecureBind, addr)
		}
	}
	assert.NoError(t, server.CheckBind("0.0.0.0:8080", []server.Token{{Name: "a", Role: server.RoleViewer, Secret: "0123456789abcdef"}}))
}

// The scheme of an Authorization header is case-insensitive (RFC 7235).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	e := newEnv(t)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		r := e.do(t, "GET", "/api/v1/count", "", nil, "Authorization", scheme+" "+viewerKey)
		assert.Equal(t, http.StatusOK, r.status, "scheme %q: %s", scheme, r.body)
	}
	for _, h := range []string{"Basic " + viewerKey, "Bearer", "Bearer " + operatorKey + "x", viewerKey} {
		r := e.do(t, "GET", "/api/v1/count", "", nil, "Authorization", h)
		assert.Equal(t, http.StatusUnauthorized, r.status, "Authorization %.10q...", h)
		assert.Equal(t, "Unauthorized", r.apiError(t).Code)
	}
}
