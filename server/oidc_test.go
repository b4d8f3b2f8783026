package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
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

const apiAudience = "amends-api"

func withOIDC(t *testing.T, e *env, iss *testissuer.Issuer, change func(*server.OIDCConfig)) *env {
	t.Helper()
	return e.with(t, func(c *server.Config) {
		o := &server.OIDCConfig{Issuer: iss.URL, Audience: apiAudience, ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, HTTPClient: iss.Server.Client()}
		if change != nil {
			change(o)
		}
		c.OIDC = o
		c.Dashboard = stubDashboard{}
	})
}

// A JWT of the issuer is a bearer token: its role comes from the role
// claim, its name from the name claim; the issuer's keys may rotate
// without a restart; a JWT of the wrong audience, expired, of another
// issuer or without a role is refused.
func TestOIDCBearerTokens(t *testing.T) {
	base := newEnv(t)
	id := base.create(t, 1, nil)
	iss := testissuer.Start(t, nil)
	al := openAudit(t, base)
	e := withOIDC(t, base, iss, nil).with(t, func(c *server.Config) { c.Audit = al })
	operator := iss.Token(apiAudience, map[string]any{"sub": "u-1", "email": "ada@example.com", "roles": []string{"amends-operator"}}, time.Hour)
	viewer := iss.Token(apiAudience, map[string]any{"sub": "u-2", "email": "bo@example.com", "roles": "amends-viewer other"}, time.Hour)

	r := e.do(t, "POST", "/api/v1/records/"+id+"/force_prepare_compensation", operator, map[string]string{"reason": "oidc operator"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	hist := e.do(t, "GET", "/api/v1/records/"+id+"/history", viewer, nil)
	require.Equal(t, http.StatusOK, hist.status, string(hist.body))
	assert.Contains(t, string(hist.body), `"actor":"`+iss.URL+`#u-1"`, "the issuer-qualified subject is the actor")
	r = e.do(t, "POST", "/api/v1/records/"+id+"/prepare_compensation", viewer, nil)
	assert.Equal(t, http.StatusForbidden, r.status, "a viewer sends no command")
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", viewerKey, nil).status, "amends tokens still work beside OIDC")

	for name, c := range map[string]struct {
		token  string
		status int
		msg    string
	}{
		"no role":        {iss.Token(apiAudience, map[string]any{"sub": "u-3", "roles": []string{"someone-else"}}, time.Hour), http.StatusForbidden, "no amends role"},
		"wrong audience": {iss.Token("another-api", map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour), http.StatusUnauthorized, "audience"},
		"expired":        {iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, -time.Minute), http.StatusUnauthorized, "expired"},
		"another issuer": {testissuer.Start(t, nil).Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour), http.StatusUnauthorized, "refused"},
		"tampered":       {operator[:len(operator)-4] + "AAAA", http.StatusUnauthorized, "refused"},
	} {
		r := e.do(t, "GET", "/api/v1/count", c.token, nil)
		assert.Equal(t, c.status, r.status, "%s: %s", name, r.body)
		assert.Contains(t, r.apiError(t).Message, c.msg, name)
	}

	// The issuer rotates its key: tokens of the new key verify at once.
	iss.Rotate(true)
	fresh := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", fresh, nil).status, "a token of the rotated key")
	iss.Rotate(false)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour), nil).status)

	failures, err := al.Query(t.Context(), audit.Query{Kind: api.AuditAuthFailure})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(failures.Entries), 5, "refused JWTs are audited")
	reasons := ""
	for _, f := range failures.Entries {
		reasons += f.Reason + "\n"
	}
	assert.Contains(t, reasons, "JWT refused")
	assert.Contains(t, reasons, "JWT without an amends role")
}

// A token of a key the issuer rotated in, met by a key fetch that ended
// just before the rotation (go-oidc's key set then answers it with the old
// keys: a token that arrives while a fetch is being cleaned up waits on
// it), is checked against a new discovery's keys and accepted; the new
// keys then serve without more discoveries. Forged tokens start no more
// discoveries than the budget (5, then one every 2 s).
func TestOIDCRotationMetByAStaleKeyFetch(t *testing.T) {
	iss := testissuer.Start(t, nil)
	e := withOIDC(t, newEnv(t), iss, nil)
	token := func() string {
		return iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour)
	}
	require.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", token(), nil).status)
	discovered := iss.Discoveries()

	iss.Rotate(true)
	iss.StaleKeys(1)
	r := e.do(t, "GET", "/api/v1/count", token(), nil)
	assert.Equal(t, http.StatusOK, r.status, "the rotated key's token: %s", r.body)
	assert.Equal(t, discovered+1, iss.Discoveries(), "the issuer discovered once more")
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", token(), nil).status)
	assert.Equal(t, discovered+1, iss.Discoveries(), "the new keys serve at once")

	forged := token()
	forged = forged[:len(forged)-4] + "AAAA"
	start := time.Now()
	for range 30 { // refused, then (the failures per address) throttled
		r := e.do(t, "GET", "/api/v1/count", forged, nil)
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, r.status, string(r.body))
	}
	budget := 5 - 1 + int(time.Since(start)/(2*time.Second)) + 1 // the rotation took one; one more may have come back meanwhile
	assert.LessOrEqual(t, iss.Discoveries()-discovered-1, budget, "forged tokens start discoveries within the budget only")
	assert.Positive(t, iss.Discoveries()-discovered-1, "a signature that does not verify does start one while the budget lasts")
}

// A nested role claim and another name claim, as Keycloak issues them.
func TestOIDCNestedRoleClaim(t *testing.T) {
	iss := testissuer.Start(t, nil)
	e := withOIDC(t, newEnv(t), iss, func(o *server.OIDCConfig) {
		o.RoleClaim, o.NameClaim, o.OperatorRoles = "realm_access.roles", "preferred_username", []string{"ops"}
	})
	tok := iss.Token(apiAudience, map[string]any{"sub": "u-9", "preferred_username": "ada", "realm_access": map[string]any{"roles": []string{"ops"}}}, time.Hour)
	r := e.do(t, "GET", "/api/v1/count", tok, nil)
	assert.Equal(t, http.StatusOK, r.status, string(r.body))
}

// An issuer that cannot be reached makes its tokens a 503, not a 401, and
// amends tokens go on working.
func TestOIDCIssuerUnreachable(t *testing.T) {
	iss := testissuer.Start(t, nil)
	tok := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-operator"}}, time.Hour)
	e := withOIDC(t, newEnv(t), iss, nil)
	iss.Server.Close()
	r := e.do(t, "GET", "/api/v1/count", tok, nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	assert.Equal(t, "Unavailable", r.apiError(t).Code)
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", viewerKey, nil).status)
}

// browserClient follows redirects and keeps cookies, as a browser does.
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// Sign-in through the issuer: the start sends the browser to the issuer
// with state, nonce and a PKCE challenge; the callback checks them,
// exchanges the code and starts a session of the ID token's identity.
func TestOIDCSignInThroughTheIssuer(t *testing.T) {
	iss := testissuer.Start(t, nil)
	al := openAudit(t, newEnv(t))
	e := withOIDC(t, newEnv(t), iss, nil).with(t, func(c *server.Config) { c.Audit = al })
	b := browserClient(t)
	resp, err := b.Get(e.http.URL + "/ui/v1/oidc/start?next=" + url.QueryEscape("/search?status=FAILED"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "/search", resp.Request.URL.Path, "back where the sign-in began")
	assert.Equal(t, "status=FAILED", resp.Request.URL.RawQuery)
	assert.Equal(t, 1, iss.Logins())

	u, _ := url.Parse(e.http.URL)
	var cookie string
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == server.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	require.NotEmpty(t, cookie)
	r := e.do(t, "GET", "/ui/v1/session", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, r.status)
	var info server.SessionInfo
	r.json(t, &info)
	assert.Equal(t, iss.URL+"#u-1", info.Name, "the issuer-qualified subject")
	assert.Equal(t, server.RoleOperator, info.Role)
	assert.Equal(t, t0+server.SessionTTL.Milliseconds(), info.Expires, "the test's clock is years before the ID token's exp: the session lasts SessionTTL (TestASessionNeverOutlivesItsCredential ends one with its ID token)")
	signIns, err := al.Query(t.Context(), audit.Query{Kind: api.AuditSignIn})
	require.NoError(t, err)
	require.Len(t, signIns.Entries, 1)
	assert.Contains(t, signIns.Entries[0].Reason, "oidc")

	// An unsigned browser learns how to sign in.
	r = e.do(t, "GET", "/ui/v1/session", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, []any{"token", "oidc"}, r.apiError(t).Details["signIn"])

	// A redirect elsewhere is not followed.
	nb := browserClient(t)
	resp, err = nb.Get(e.http.URL + "/ui/v1/oidc/start?next=" + url.QueryEscape("//evil.example/x"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "/", resp.Request.URL.Path, "only a local next")
	assert.Equal(t, strings.TrimPrefix(e.http.URL, "http://"), resp.Request.URL.Host)
}

// The callback refuses a state that is not the browser's, a missing
// sign-in, a code used twice, and an identity without a role.
func TestOIDCCallbackRefusals(t *testing.T) {
	iss := testissuer.Start(t, nil)
	e := withOIDC(t, newEnv(t), iss, nil)
	noRedirect := browserClient(t)
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// Start a sign-in and stop at the issuer's redirect back.
	resp, err := noRedirect.Get(e.http.URL + "/ui/v1/oidc/start")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	at, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "S256", at.Query().Get("code_challenge_method"))
	assert.NotEmpty(t, at.Query().Get("nonce"))
	assert.Contains(t, resp.Header.Get("Set-Cookie"), "SameSite=Lax")
	assert.Contains(t, resp.Header.Get("Set-Cookie"), "HttpOnly")
	resp, err = noRedirect.Get(at.String())
	require.NoError(t, err)
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)

	forged := *back
	q := forged.Query()
	q.Set("state", "not-the-state")
	forged.RawQuery = q.Encode()
	resp, err = noRedirect.Get(forged.String())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a forged state")

	other := browserClient(t)
	other.CheckRedirect = noRedirect.CheckRedirect
	resp, err = other.Get(back.String())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "another browser (no sign-in cookie) cannot use the code")

	// A new sign-in of a user without a role.
	iss.SignInAs(map[string]any{"sub": "u-7", "email": "eve@example.com", "roles": []string{"nothing"}})
	nb := browserClient(t)
	resp, err = nb.Get(e.http.URL + "/ui/v1/oidc/start")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "NoRole")
}

// Finding 4 of "authentication never falls open": a callback with no state
// (GET /ui/v1/oidc/callback?error=x, which any page can make a browser
// send) counted as a failed authentication of the caller's address, so a
// page could get its visitors refused (429). Only a failed check of a real
// credential counts: many such callbacks leave the address its budget, and
// write nothing to the audit log.
func TestOIDCCallbacksWithoutACredentialDoNotLockTheClientOut(t *testing.T) {
	iss := testissuer.Start(t, nil)
	base := newEnv(t)
	al := openAudit(t, base)
	e := withOIDC(t, base.with(t, func(c *server.Config) { c.Audit = al }), iss, nil)
	for i := range 3 * server.DefaultAuthLimits.Failures {
		for _, q := range []string{"error=access_denied", "state=x&code=y", "code=y"} {
			got := e.do(t, "GET", "/ui/v1/oidc/callback?"+q, "", nil)
			require.Equal(t, http.StatusUnauthorized, got.status, "request %d: %s", i, got.body)
		}
	}
	assert.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/count", viewerKey, nil).status, "the address is not refused")
	page, err := al.Query(t.Context(), audit.Query{Kind: api.AuditAuthFailure})
	require.NoError(t, err)
	assert.Empty(t, page.Entries, "nothing was authenticated, so nothing failed")
	// A real credential that fails still counts.
	for range server.DefaultAuthLimits.Failures + 1 {
		e.do(t, "GET", "/api/v1/count", "amends_not-a-token", nil)
	}
	assert.Equal(t, http.StatusTooManyRequests, e.do(t, "GET", "/api/v1/count", viewerKey, nil).status)
	page, err = al.Query(t.Context(), audit.Query{Kind: api.AuditAuthFailure})
	require.NoError(t, err)
	assert.NotEmpty(t, page.Entries, "and is audited")
}
