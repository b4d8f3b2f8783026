package server_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testissuer"
	"github.com/amends-dev/amends/server"
)

// publicRoutes are the only routes a request without a credential
// reaches: probes, the API's description, the dashboard's pages and
// assets (their data needs a session), and the ways to sign in.
var publicRoutes = []string{
	"GET /healthz", "GET /readyz", "GET /api/v1/openapi.json",
	"GET /{$}", "GET /search", "GET /record", "GET /fingerprints", "GET /circuits", "GET /circuits/{function}", "GET /holds", "GET /audit", "GET /archive", "GET /signin", "GET /assets/{file...}",
	"GET /ui/v1/session", "POST /ui/v1/session", "DELETE /ui/v1/session",
	"GET /ui/v1/oidc/start", "GET " + server.OIDCCallbackPath,
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// concrete fills a pattern's parameters with values of the right shape.
func concrete(pattern string) string {
	p := strings.TrimSuffix(pattern, "{$}")
	return pathParam.ReplaceAllStringFunc(p, func(v string) string {
		switch v {
		case "{function}":
			return "order.Mailer.send"
		case "{file...}", "{data...}":
			return "x/y"
		}
		return "x"
	})
}

// Once any credential source is configured (tokens, an OIDC issuer, or
// both), every route that is not public answers 401 to a request without
// a credential: before any reload, after the tokens change, after a
// reload that would empty them (refused), and after the issuer rotates
// its keys. No route is public unless it is listed as such.
func TestEveryRouteAnswers401WithoutACredential(t *testing.T) {
	base := newEnv(t)
	iss := testissuer.Start(t, nil)
	oidcCfg := &server.OIDCConfig{Issuer: iss.URL, Audience: apiAudience, ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, HTTPClient: iss.Server.Client()}
	other, err := server.ParseTokens("carol:operator:" + strings.Repeat("c", 32))
	require.NoError(t, err)

	for name, change := range map[string]func(*server.Config){
		"tokens":          func(c *server.Config) {},
		"oidc":            func(c *server.Config) { c.Tokens, c.OIDC = nil, oidcCfg },
		"tokens and oidc": func(c *server.Config) { c.OIDC = oidcCfg },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base.cfg
			cfg.Dashboard = stubDashboard{}
			change(&cfg)
			s := server.New(cfg)
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)

			var public []string
			for _, rt := range s.RouteList() {
				if rt.Role == "" {
					public = append(public, rt.Method+" "+rt.Pattern)
				}
			}
			slices.Sort(public)
			want := slices.Clone(publicRoutes)
			slices.Sort(want)
			assert.Equal(t, want, public, "the routes that need no credential")

			check := func(when string) {
				t.Helper()
				n := 0
				for _, rt := range s.RouteList() {
					if rt.Role == "" && rt.Pattern != "/ui/v1/session" || rt.Pattern == "/ui/v1/session" && rt.Method != "GET" {
						continue
					}
					req, err := http.NewRequestWithContext(t.Context(), rt.Method, srv.URL+concrete(rt.Pattern), strings.NewReader("{}"))
					require.NoError(t, err)
					req.Header.Set("Content-Type", "application/json")
					resp, err := srv.Client().Do(req)
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s %s", when, rt.Method, rt.Pattern)
					n++
				}
				assert.Equal(t, len(s.RouteList())-len(publicRoutes)+1, n, "%s: every route that needs a role, and who-am-I", when)
				assert.GreaterOrEqual(t, n, 40, "%s: the routes checked", when)
				t.Logf("%s: %d routes answered 401", when, n)
			}
			check("at start-up")
			if cfg.Tokens != nil {
				require.NoError(t, s.SetTokens(t.Context(), other))
				check("after the tokens changed")
				if cfg.OIDC == nil {
					require.ErrorIs(t, s.SetTokens(t.Context(), nil), server.ErrNoCredentials)
					check("after a reload that would empty the tokens (refused)")
				} else {
					require.NoError(t, s.SetTokens(t.Context(), nil), "the issuer still authenticates")
					check("after the tokens were emptied beside the issuer")
				}
			} else {
				require.NoError(t, s.SetTokens(t.Context(), nil), "no tokens, as before")
				check("after a reload of no tokens beside the issuer")
				require.NoError(t, s.SetTokens(t.Context(), other))
				check("after tokens came beside the issuer")
				require.NoError(t, s.SetTokens(t.Context(), nil), "the issuer still authenticates")
				check("after the tokens went again")
			}
			if cfg.OIDC != nil {
				iss.Rotate(true)
				tok := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-viewer"}}, time.Hour)
				req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/api/v1/count", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode, "a JWT of the rotated key")
				check("after the issuer rotated its keys")
			}
		})
	}
}
