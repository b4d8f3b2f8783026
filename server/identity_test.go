package server_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/internal/testissuer"
	"github.com/amends-dev/amends/server"
)

// jwtExpiry reads the exp claim of a JWT the test issuer signed.
func jwtExpiry(t *testing.T, jwt string) time.Time {
	t.Helper()
	parts := strings.Split(jwt, ".")
	require.Len(t, parts, 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var c struct {
		Exp int64 `json:"exp"`
	}
	require.NoError(t, json.Unmarshal(b, &c))
	return time.Unix(c.Exp, 0)
}

// sessionCookieOf returns the session cookie a browser client holds for e.
func sessionCookieOf(t *testing.T, b *http.Client, e *env) string {
	t.Helper()
	u, err := url.Parse(e.http.URL)
	require.NoError(t, err)
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == server.SessionCookie {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatal("the browser holds no session cookie")
	return ""
}

// A session never outlives the credential it was made from: a JWT of a
// minute posted to the sign-in (it used to buy a 12-hour session) makes
// a session that ends at the JWT's exp, and a sign-in through the issuer
// one that ends with its ID token.
func TestASessionNeverOutlivesItsCredential(t *testing.T) {
	base := newEnv(t)
	start := time.Now()
	base.clock.Set(start) // the issuer signs on the system's clock
	iss := testissuer.Start(t, nil)
	e := withOIDC(t, base, iss, nil)

	jwt := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Minute)
	exp := jwtExpiry(t, jwt)
	cookie, _, resp := signIn(t, e, jwt)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	var info server.SessionInfo
	resp.json(t, &info)
	assert.Equal(t, exp.UnixMilli(), info.Expires, "the session ends with the JWT")
	c := (&http.Response{Header: resp.header}).Cookies()
	require.NotEmpty(t, c)
	assert.LessOrEqual(t, c[0].MaxAge, 61, "the cookie lasts no longer than the JWT")
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", "", nil, "Cookie", cookie).status)
	base.clock.Set(exp)
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/count", "", nil, "Cookie", cookie).status, "the session ended with its JWT")
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie).status)

	// Through the issuer: the ID token lasts an hour, and so does the session.
	base.clock.Set(start)
	b := browserClient(t)
	before := time.Now().Truncate(time.Second)
	r, err := b.Get(e.http.URL + "/ui/v1/oidc/start")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	after := time.Now()
	require.Equal(t, 1, iss.Logins())
	cookie = sessionCookieOf(t, b, e)
	got := e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, got.status, string(got.body))
	got.json(t, &info)
	assert.GreaterOrEqual(t, info.Expires, before.Add(time.Hour).UnixMilli(), "the ID token's hour")
	assert.LessOrEqual(t, info.Expires, after.Add(time.Hour).UnixMilli(), "not SessionTTL")
	base.clock.Set(time.UnixMilli(info.Expires))
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/count", "", nil, "Cookie", cookie).status, "the session ended with its ID token")
}

// The actor of an OIDC identity is the issuer-qualified subject, which
// no user can choose; an e-mail address only when the issuer verified it
// and the server was told to use it. Every OIDC actor holds a ':', which
// no token's name can.
func TestOIDCActorIsTheIssuersSubjectOrAVerifiedEmail(t *testing.T) {
	base := newEnv(t)
	iss := testissuer.Start(t, nil)
	actorOf := func(e *env, i int, claims map[string]any) string {
		t.Helper()
		id := base.create(t, i, nil)
		claims["roles"] = []string{"amends-operator"}
		tok := iss.Token(apiAudience, claims, time.Hour)
		r := e.do(t, "POST", "/api/v1/records/"+id+"/force_prepare_compensation", tok, map[string]string{"reason": "who am I"})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		h := e.do(t, "GET", "/api/v1/records/"+id+"/history", viewerKey, nil)
		require.Equal(t, http.StatusOK, h.status, string(h.body))
		var hist []struct {
			Command, Actor string
		}
		h.json(t, &hist)
		for _, c := range hist {
			if c.Command == "force_prepare_compensation" {
				return c.Actor
			}
		}
		t.Fatalf("no force_prepare_compensation in %s", h.body)
		return ""
	}
	subject := iss.URL + "#u-1"
	byDefault := withOIDC(t, base, iss, nil)
	assert.Equal(t, subject, actorOf(byDefault, 1, map[string]any{"sub": "u-1", "email": "ada@example.com", "email_verified": true}),
		"by default the subject, whatever the e-mail")

	byEmail := withOIDC(t, base, iss, func(o *server.OIDCConfig) { o.NameClaim = "email" })
	for i, c := range []struct {
		verified any
		want     string
	}{
		{nil, subject},
		{false, subject},
		{"false", subject},
		{"yes", subject},
		{true, "oidc:ada@example.com"},
		{"true", "oidc:ada@example.com"},
	} {
		claims := map[string]any{"sub": "u-1", "email": "ada@example.com"}
		if c.verified != nil {
			claims["email_verified"] = c.verified
		}
		assert.Equal(t, c.want, actorOf(byEmail, 10+i, claims), "email_verified %v", c.verified)
	}
	assert.Equal(t, subject, actorOf(byEmail, 20, map[string]any{"sub": "u-1", "email": "ada\u202e@example.com", "email_verified": true}),
		"an address that is not printable is not a name")

	long := strings.Repeat("u", 250) // printable, but with the issuer over an actor's 256 bytes
	r := byDefault.do(t, "GET", "/api/v1/count", iss.Token(apiAudience, map[string]any{"sub": long, "roles": []string{"amends-operator"}}, time.Hour), nil)
	assert.Equal(t, http.StatusUnauthorized, r.status, "a subject too long to be an actor is refused, not cut")
	assert.Contains(t, r.apiError(t).Message, "over 256 bytes")
}

// Every audit entry says which kind of credential its actor presented:
// a token's name and an OIDC actor are never confused.
func TestEveryAuditEntryNamesItsCredential(t *testing.T) {
	base := newEnv(t)
	base.clock.Set(time.Now())
	iss := testissuer.Start(t, nil)
	al := openAudit(t, base)
	e := withOIDC(t, base, iss, nil).with(t, func(c *server.Config) { c.Audit = al })

	_, _, resp := signIn(t, e, viewerKey)
	require.Equal(t, http.StatusOK, resp.status)
	cookie, csrf, resp := signIn(t, e, iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-viewer"}}, time.Hour))
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	r := e.do(t, "DELETE", "/ui/v1/session", "", nil, "Cookie", cookie, "Origin", e.http.URL, server.CSRFHeader, csrf)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	_, _, _ = signIn(t, e, "not-a-token-at-all-0123")
	_, _, _ = signIn(t, e, "a.b.c")
	_ = e.do(t, "GET", "/api/v1/count", "", nil, "Cookie", server.SessionCookie+"="+strings.Repeat("A", 43))

	page, err := al.Query(t.Context(), audit.Query{})
	require.NoError(t, err)
	var got []string
	for _, en := range page.Entries {
		require.NotEmpty(t, en.Credential, "entry %+v", en)
		got = append(got, string(en.Kind)+" "+en.Actor+" "+string(en.Credential))
	}
	subject := iss.URL + "#u-1"
	assert.Equal(t, []string{
		"sign_in alice " + string(api.CredentialToken),
		"sign_in " + subject + " " + string(api.CredentialOIDC),
		"sign_out " + subject + " " + string(api.CredentialSessionOIDC),
		"auth_failure  " + string(api.CredentialToken),
		"auth_failure  " + string(api.CredentialOIDC),
		"auth_failure  " + string(api.CredentialSession),
	}, got)
}

// A live stream ends when the credential it came with expires: a JWT's
// bearer stream at the JWT's exp, and the stream of a session made from
// that JWT with the session.
func TestALiveStreamEndsWithItsCredential(t *testing.T) {
	base := newEnv(t)
	iss := testissuer.Start(t, nil)
	e := withOIDC(t, base, iss, nil).with(t, func(c *server.Config) { c.Dashboard = streamDashboard{} })
	jwt := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-viewer"}}, time.Hour)
	exp := jwtExpiry(t, jwt)
	// The server's clock a moment before the JWT ends: its requests end
	// then, on the system's clock.
	base.clock.Set(exp.Add(-1500 * time.Millisecond))
	cookie, _, resp := signIn(t, e, jwt)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	bearer := openStream(t, e.http.URL, "Authorization", "Bearer "+jwt)
	session := openStream(t, e.http.URL, "Cookie", cookie)
	token := openStream(t, e.http.URL, "Authorization", "Bearer "+viewerKey)
	assert.True(t, ends(t, bearer, 10*time.Second), "the JWT's stream ends at its exp")
	assert.True(t, ends(t, session, 10*time.Second), "the session's stream ends with the JWT")
	assert.False(t, ends(t, token, 300*time.Millisecond), "a stream of a token without expiry goes on")
}
