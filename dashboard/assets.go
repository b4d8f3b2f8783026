package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tdewolff/minify/v2"
	"github.com/tdewolff/minify/v2/css"
	"github.com/tdewolff/minify/v2/js"
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
	"/":             "index.html",
	"/search":       "search.html",
	"/record":       "record.html",
	"/fingerprints": "fingerprints.html",
	"/circuits":     "circuits.html",
	"/holds":        "holds.html",
	"/audit":        "audit.html",
	"/archive":      "archive.html",
	"/signin":       "signin.html",
}

// pageOf returns the HTML file of a page path: one of pages, or a
// function's incident view, /circuits/CONTEXT.PROCESSOR.NAME (its script
// reads the function from the path).
func pageOf(p string) (string, bool) {
	if name, ok := pages[p]; ok {
		return name, true
	}
	if fn, ok := strings.CutPrefix(p, "/circuits/"); ok && fn != "" && !strings.Contains(fn, "/") {
		return "circuit.html", true
	}
	return "", false
}

// headerInclude is replaced, in every page, by the shared header
// (header.inc): the brand, the main navigation and the session's box.
const headerInclude = "<!--header-->"

// secure sets the headers every dashboard response carries.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// served is one file as it is sent: minified (scripts and styles), its
// gzip encoding, and the ETag and version of its content.
type served struct {
	contentType string
	plain, gz   []byte
	etag        string
	version     string // the first hex digits of the content's SHA-256
}

// catalog holds every asset and page, prepared once.
type catalog map[string]*served

var (
	catalogOnce sync.Once
	builtFiles  catalog
)

// files returns the prepared assets, building them on first use: the
// scripts and styles minified, the pages with versioned asset URLs, each
// gzip-compressed once.
func files() catalog {
	catalogOnce.Do(func() { builtFiles = buildCatalog(assets) })
	return builtFiles
}

// assetRef finds the asset references of a page to version them.
var assetRef = regexp.MustCompile(`(src|href)="/assets/([a-z]+\.(?:js|css))"`)

func buildCatalog(fsys fs.FS) catalog {
	m := minify.New()
	m.AddFunc("text/css", css.Minify)
	m.AddFunc("text/javascript", js.Minify)
	out := catalog{}
	names, _ := fs.Glob(fsys, "*")
	header, _ := fs.ReadFile(fsys, "header.inc")
	// Assets first, so that pages can name their versions.
	for _, name := range names {
		if strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".inc") {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			continue
		}
		ct := contentType(name)
		if strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".css") {
			mt := "text/css"
			if strings.HasSuffix(name, ".js") {
				mt = "text/javascript"
			}
			// A minifier failure keeps the file as written: it still works,
			// only larger.
			if small, err := m.Bytes(mt, data); err == nil {
				data = small
			}
		}
		out[name] = prepare(ct, data)
	}
	for _, name := range names {
		if !strings.HasSuffix(name, ".html") {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			continue
		}
		data = bytes.Replace(data, []byte(headerInclude), bytes.TrimSpace(header), 1)
		data = assetRef.ReplaceAllFunc(data, func(ref []byte) []byte {
			sub := assetRef.FindSubmatch(ref)
			a := out[string(sub[2])]
			if a == nil {
				return ref
			}
			return []byte(string(sub[1]) + `="/assets/` + string(sub[2]) + "?v=" + a.version + `"`)
		})
		out[name] = prepare(contentType(name), data)
	}
	return out
}

func contentType(name string) string {
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return ct
}

func prepare(ct string, data []byte) *served {
	sum := sha256.Sum256(data)
	s := &served{contentType: ct, plain: data, version: hex.EncodeToString(sum[:6])}
	s.etag = `"` + s.version + `"`
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(data)
	_ = zw.Close()
	if b.Len() < len(data) {
		s.gz = b.Bytes()
	}
	return s
}

// acceptsGzip reports whether the request accepts a gzip body (an
// Accept-Encoding naming gzip without q=0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") || strings.TrimSpace(name) == "*" {
				q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
				return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
			}
		}
	}
	return false
}

// ServePage serves the pages and /assets/...; they hold no data, so the
// server needs no sign-in for them. Scripts and styles are minified;
// every file is sent gzip-compressed to a browser that accepts it, with an
// ETag; an asset requested with its current version (?v=, as the pages
// name them) may be cached for a year.
func (d *Dashboard) ServePage(w http.ResponseWriter, r *http.Request) {
	secure(w)
	name, ok := pageOf(r.URL.Path)
	cache := "no-cache"
	if !ok {
		rest, isAsset := strings.CutPrefix(r.URL.Path, "/assets/")
		if !isAsset || rest == "" || strings.HasSuffix(rest, ".html") || path.Clean("/"+rest) != "/"+rest {
			writeError(w, http.StatusNotFound, "NotFound", "no dashboard page at "+clip(r.URL.Path), nil)
			return
		}
		name = rest
	}
	f := files()[name]
	if f == nil {
		writeError(w, http.StatusNotFound, "NotFound", "no dashboard asset at "+clip(r.URL.Path), nil)
		return
	}
	if !ok && r.URL.Query().Get("v") == f.version {
		cache = "public, max-age=31536000, immutable"
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", cache)
	body, etag := f.plain, f.etag
	if f.gz != nil {
		h.Set("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			// Each representation has its own strong ETag.
			h.Set("Content-Encoding", "gzip")
			body, etag = f.gz, `"`+f.version+`-gz"`
		}
	}
	h.Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// etagMatches reports whether an If-None-Match header names etag (or *).
func etagMatches(header, etag string) bool {
	for part := range strings.SplitSeq(header, ",") {
		p := strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if p == etag || p == "*" {
			return true
		}
	}
	return false
}
