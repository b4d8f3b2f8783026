package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/server"
)

func TestParseTokens(t *testing.T) {
	hashed := server.NewSecret()
	tokens, err := server.ParseTokens("# ops\nalice:viewer:0123456789abcdef\n\nbob:operator:fedcba9876543210,carol : viewer : aaaaaaaaaaaaaaaa\n" +
		server.TokenLine("dave", server.RoleOperator, hashed, time.Time{}) + "\n" +
		"erin:viewer:" + server.HashSecret("erin-secret-0123456789") + " expires=2027-01-31\n" +
		"frank:viewer:frank-secret-012345 expires=2026-06-30T12:00:00+02:00")
	require.NoError(t, err)
	require.Len(t, tokens, 6)
	names := []string{}
	for _, tk := range tokens {
		names = append(names, tk.Name+":"+string(tk.Role))
	}
	assert.Equal(t, []string{"alice:viewer", "bob:operator", "carol:viewer", "dave:operator", "erin:viewer", "frank:viewer"}, names)
	assert.Equal(t, "0123456789abcdef", tokens[0].Secret)
	assert.False(t, tokens[0].Hashed())
	assert.Equal(t, "aaaaaaaaaaaaaaaa", tokens[2].Secret, "spaces around the separators are allowed")
	assert.True(t, tokens[3].Hashed(), "a hashed line holds no secret")
	assert.Empty(t, tokens[3].Secret)
	assert.True(t, tokens[3].Expires.IsZero())
	assert.Equal(t, time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC), tokens[4].Expires, "a date means its start in UTC")
	assert.True(t, time.Date(2026, 6, 30, 10, 0, 0, 0, time.UTC).Equal(tokens[5].Expires))
	assert.Regexp(t, `^amends_[A-Za-z0-9_-]{43}$`, hashed)
	assert.Regexp(t, `^dave:operator:sha256:[0-9a-f]{64}$`, server.TokenLine("dave", server.RoleOperator, hashed, time.Time{}))
	assert.NotContains(t, server.TokenLine("dave", server.RoleOperator, hashed, time.Time{}), hashed)

	for text, want := range map[string]string{
		"alice:viewer":                 "token entry 1 is not name:role:secret",
		":viewer:0123456789abcdef":     "token entry 1 has an empty name",
		"alice:admin:0123456789abcdef": `token "alice" has role "admin"; the roles are viewer and operator`,
		"alice:viewer:short":           `token "alice" has a secret of 5 characters; use at least 16`,
		"a:viewer:0123456789abcdef,a:operator:0123456789abcdeg":                                `token name "a" appears twice`,
		"ops:operator:0123456789abcdef\nwatch:viewer:0123456789abcdef":                         `tokens "ops" and "watch" have the same secret`,
		"ops:operator:0123456789abcdef\nwatch:viewer:" + server.HashSecret("0123456789abcdef"): `tokens "ops" and "watch" have the same secret`,
		"alice:viewer:sha256:0123456789abcdef":                                                 "hashed secret that is not sha256: and 64 hex digits",
		"alice:viewer:0123456789abcdef expires=tomorrow":                                       "expires=tomorrow is not a time",
		"alice:viewer:0123456789abcdef colour=blue":                                            `unknown attribute "colour"`,
		"ali\u202ece:viewer:0123456789abcdef":                                                  "name that is not up to 256 bytes of printable text",
	} {
		_, err := server.ParseTokens(text)
		assert.ErrorContains(t, err, want)
		if err != nil {
			assert.NotContains(t, err.Error(), "0123456789abcdef", "errors never show a secret")
		}
	}
}

// A hashed token authenticates with its secret; an expired one is refused
// with a message that says so, in the API and at sign-in.
func TestHashedAndExpiringTokens(t *testing.T) {
	base := newEnv(t)
	secret, old := server.NewSecret(), server.NewSecret()
	tokens, err := server.ParseTokens(server.TokenLine("dave", server.RoleOperator, secret, time.Time{}) + "\n" +
		server.TokenLine("olga", server.RoleViewer, old, time.UnixMilli(t0).Add(time.Hour)))
	require.NoError(t, err)
	e := withDashboard(t, base.with(t, func(c *server.Config) { c.Tokens = tokens }), true)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", secret, nil).status)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", old, nil).status, "before its expiry")
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/count", server.HashSecret(secret), nil).status, "the hash is not the secret")
	e.clock.SetMillis(t0 + time.Hour.Milliseconds())
	r := e.do(t, "GET", "/api/v1/count", old, nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	assert.Contains(t, r.apiError(t).Message, "expired")
	_, _, resp := signIn(t, e, old)
	require.Equal(t, http.StatusUnauthorized, resp.status)
	assert.Contains(t, resp.apiError(t).Message, "expired")
	_, _, resp = signIn(t, e, secret)
	assert.Equal(t, http.StatusOK, resp.status)
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
