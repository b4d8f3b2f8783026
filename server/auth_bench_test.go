package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testissuer"
	"github.com/amends-dev/amends/server"
)

// BenchmarkAuthentication is the cost of each way in, on the handler
// alone (no network), against a floor measured in the same run: /healthz,
// which the front handler checks (Host, path, headers) but which needs no
// credential. Report the ratios to the floor:
//
//	go test -run '^$' -bench Authentication -benchtime 2000x ./server/
func BenchmarkAuthentication(b *testing.B) {
	base := newEnv(b)
	iss := testissuer.Start(b, nil)
	e := base.with(b, func(c *server.Config) {
		c.Dashboard = stubDashboard{}
		c.OIDC = &server.OIDCConfig{Issuer: iss.URL, Audience: apiAudience, HTTPClient: iss.Server.Client()}
		c.AuthLimits = server.AuthLimits{Failures: 1 << 30}
	})
	cookie, _, resp := signIn(b, e, viewerKey)
	require.Equal(b, http.StatusOK, resp.status)
	jwt := iss.Token(apiAudience, map[string]any{"sub": "u-1", "roles": []string{"amends-viewer"}}, time.Hour)
	for _, c := range []struct {
		name, path, header, value string
		want                      int
	}{
		{"floor-healthz", "/healthz", "", "", http.StatusOK},
		{"token", "/ui/v1/x", "Authorization", "Bearer " + viewerKey, http.StatusOK},
		{"session", "/ui/v1/x", "Cookie", cookie, http.StatusOK},
		{"jwt", "/ui/v1/x", "Authorization", "Bearer " + jwt, http.StatusOK},
		{"unknown-token", "/ui/v1/x", "Authorization", "Bearer not-a-token-0123456789", http.StatusUnauthorized},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "http://127.0.0.1"+c.path, nil)
			if c.header != "" {
				req.Header.Set(c.header, c.value)
			}
			for b.Loop() {
				w := httptest.NewRecorder()
				e.handler.ServeHTTP(w, req)
				if w.Code != c.want {
					b.Fatalf("%s: %d %s", c.name, w.Code, w.Body.String())
				}
			}
		})
	}
}
