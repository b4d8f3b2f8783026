package dashboard_test

import (
	"html/template"
	"net/http"
	"net/http/httptest"
	"testing"
)

var evilPage = template.Must(template.New("evil").Parse(`<!doctype html><title>another site</title>
<form id="attack" method="post" action="{{.}}" enctype="text/plain">
<input type="hidden" name='{"reason":"' value='forged"}'>
<button id="go" type="submit">win a prize</button>
</form>`))

// newEvilSite serves, on another port of 127.0.0.1 (another origin, the
// same site), a page whose form posts to target; it returns its URL.
func newEvilSite(tb testing.TB, target string) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = evilPage.Execute(w, target)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/"
}
