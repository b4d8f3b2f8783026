package dashboard

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assetsFS embed.FS

// assets is the embedded assets directory.
var assets, _ = fs.Sub(assetsFS, "assets")

// ContentSecurityPolicy is the policy of every dashboard response: nothing
// but the server's own scripts, styles, images and API; no inline code, no
// framing, no plug-ins, forms only to the server.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// pages maps the page paths to their HTML files.
var pages = map[string]string{
	"/":       "index.html",
	"/search": "search.html",
	"/record": "record.html",
	"/signin": "signin.html",
}

// secure sets the headers every dashboard response carries.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// ServePage serves the pages and /assets/...; they hold no data, so the
// server needs no sign-in for them.
func (d *Dashboard) ServePage(w http.ResponseWriter, r *http.Request) {
	secure(w)
	name, ok := pages[r.URL.Path]
	cache := "no-cache"
	if !ok {
		rest, isAsset := strings.CutPrefix(r.URL.Path, "/assets/")
		if !isAsset || rest == "" || strings.HasSuffix(rest, ".html") || path.Clean("/"+rest) != "/"+rest {
			writeError(w, http.StatusNotFound, "NotFound", "no dashboard page at "+clip(r.URL.Path), nil)
			return
		}
		name = rest
	}
	data, err := fs.ReadFile(assets, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "NotFound", "no dashboard asset at "+clip(r.URL.Path), nil)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", cache)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(data)
}
