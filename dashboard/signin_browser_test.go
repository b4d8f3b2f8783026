package dashboard_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testca"
	"github.com/amends-dev/amends/internal/testissuer"
	"github.com/amends-dev/amends/server"
)

// tlsTab starts a chromium of its own that trusts exactly the given
// certificates (by their public keys: --ignore-certificate-errors-spki-list,
// which applies with the temporary profile chromedp makes) and returns a
// tab of it. Without a browser the test is skipped loudly, or fails when
// CI=true.
func tlsTab(t *testing.T, trusted ...testca.Leaf) context.Context {
	t.Helper()
	path := needBrowser(t)
	spki := ""
	for i, l := range trusted {
		if i > 0 {
			spki += ","
		}
		spki += l.SPKI()
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true), chromedp.Flag("ignore-certificate-errors-spki-list", spki))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel() })
	require.NoError(t, chromedp.Do(bctx), "start chromium at %s", path)
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The dashboard over HTTPS (certificates of a CA made in the test), signed
// in through an OIDC issuer (over HTTPS too) and then with a token: the
// session cookie is Secure, HttpOnly and SameSite=Strict, answers carry
// HSTS, and signing out ends the session.
func TestBrowserSignInOverTLSAndThroughOIDC(t *testing.T) {
	needBrowser(t)
	ca := testca.New(t)
	serverCert, issuerCert := ca.Issue(t, 1, false), ca.Issue(t, 2, false)
	iss := testissuer.Start(t, &tls.Config{Certificates: []tls.Certificate{issuerCert.TLSCert(t)}, MinVersion: tls.VersionTLS12})
	iss.SignInAs(map[string]any{"sub": "u-42", "email": "ada@example.com", "email_verified": true, "roles": []string{"amends-operator"}})
	issuerClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}}
	s := newStack(t, 1, 0, true, func(st *stackSetup) {
		st.cfg.OIDC = &server.OIDCConfig{Issuer: iss.URL, Audience: "amends-api", ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, HTTPClient: issuerClient, NameClaim: "email"}
		st.tls = &tls.Config{Certificates: []tls.Certificate{serverCert.TLSCert(t)}, MinVersion: tls.VersionTLS12}
	})
	require.Contains(t, s.http.URL, "https://")
	ctx := tlsTab(t, serverCert, issuerCert)

	do(t, ctx, "open the sign-in page over TLS", chromedp.Navigate(s.http.URL+"/signin?next=%2Fsearch"))
	until(t, ctx, "the single sign-on link shows", `document.querySelector('#sso') && !document.querySelector('#sso').hidden`)
	do(t, ctx, "sign in through the issuer", chromedp.Click("#sso-link"))
	until(t, ctx, "back on the dashboard, signed in as the issuer's user",
		`location.pathname === "/search" && document.querySelector('#who-name')?.textContent === "oidc:ada@example.com · operator"`)
	assert.Equal(t, 1, iss.Logins(), "one code exchange")

	got, err := chromedp.Run(ctx, chromedp.Action[network.GetCookiesResult](func(ctx context.Context, tg *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{s.http.URL}})
	}))
	require.NoError(t, err)
	var session *network.Cookie
	for _, c := range got.Cookies {
		if c.Name == server.SessionCookie {
			session = c
		}
	}
	require.NotNil(t, session, "the session cookie is set")
	assert.True(t, session.Secure, "Secure over TLS")
	assert.True(t, session.HTTPOnly)
	assert.Equal(t, network.CookieSameSiteStrict, session.SameSite)
	assert.NotContains(t, eval[string](t, ctx, `document.cookie`), server.SessionCookie, "scripts cannot read it")
	assert.Equal(t, "max-age=31536000", eval[string](t, ctx, `fetch("/healthz").then(r => r.headers.get("strict-transport-security"))`))

	do(t, ctx, "sign out", chromedp.Click("#signout"))
	until(t, ctx, "the sign-in page", `location.pathname === "/signin" && !document.querySelector('#sso').hidden`)
	assert.Equal(t, float64(401), eval[float64](t, ctx, `fetch("/ui/v1/session").then(r => r.status)`), "the session ended")

	// A token over TLS signs in too.
	do(t, ctx, "sign in with a token",
		chromedp.SetValue("#token", viewerToken),
		chromedp.Click("#signin"))
	until(t, ctx, "signed in as the token's name", `document.querySelector('#who-name')?.textContent === "alice · viewer"`)
	assert.NotContains(t, eval[string](t, ctx, `location.href`), viewerToken, "the token is never in a URL")
}
