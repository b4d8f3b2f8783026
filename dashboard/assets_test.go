package dashboard_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fetch gets path from the stack's server with the given request headers,
// without the transport's own decompression.
func fetch(tb testing.TB, s *stack, path string, header map[string]string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, s.http.URL+path, nil)
	require.NoError(tb, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp, body
}

// The pages and assets are sent gzip-compressed to a browser that accepts
// it, the scripts and styles minified, each with an ETag that answers a
// revalidation with 304; an asset named by its current version may be
// kept for a year, any other only revalidated (issue 30, item 9).
func TestAssetsAreMinifiedCompressedAndVersioned(t *testing.T) {
	s := newStack(t, 0, 0, false)
	page, html := fetch(t, s, "/record", nil)
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Equal(t, "no-cache", page.Header.Get("Cache-Control"), "a page is revalidated each time")
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[a-z]+\.(?:js|css)\?v=[0-9a-f]{12})"`).FindAllStringSubmatch(string(html), -1)
	require.Len(t, refs, 4, "the record page names its style and three scripts by version")
	for _, ref := range refs {
		path := ref[1]
		plain, body := fetch(t, s, path, nil)
		require.Equal(t, http.StatusOK, plain.StatusCode, path)
		assert.Empty(t, plain.Header.Get("Content-Encoding"), "%s: no encoding the client did not ask for", path)
		assert.Equal(t, "public, max-age=31536000, immutable", plain.Header.Get("Cache-Control"), path)
		assert.Equal(t, "Accept-Encoding", plain.Header.Get("Vary"), path)
		assert.NotContains(t, string(body), "\n  ", "%s is minified (no indented lines)", path)

		gz, zbody := fetch(t, s, path, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
		require.Equal(t, "gzip", gz.Header.Get("Content-Encoding"), path)
		assert.Less(t, len(zbody), len(body)*2/3, "%s is compressed", path)
		zr, err := gzip.NewReader(strings.NewReader(string(zbody)))
		require.NoError(t, err, path)
		unzipped, err := io.ReadAll(zr)
		require.NoError(t, err, path)
		assert.Equal(t, string(body), string(unzipped), "%s: the same content either way", path)
		assert.NotEqual(t, plain.Header.Get("ETag"), gz.Header.Get("ETag"), "each representation has its own ETag")

		again, rest := fetch(t, s, path, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gz.Header.Get("ETag")})
		assert.Equal(t, http.StatusNotModified, again.StatusCode, path)
		assert.Empty(t, rest, path)
		_, none := fetch(t, s, path, map[string]string{"Accept-Encoding": "gzip;q=0"})
		assert.Equal(t, string(body), string(none), "%s: gzip;q=0 refuses gzip", path)
	}
	stale, _ := fetch(t, s, "/assets/record.js?v=000000000000", nil)
	assert.Equal(t, "no-cache", stale.Header.Get("Cache-Control"), "an old version is not cached for long: it is not what the name says")
	js, body := fetch(t, s, "/assets/common.js", nil)
	assert.Equal(t, "no-cache", js.Header.Get("Cache-Control"))
	assert.Contains(t, string(body), "EventSource", "the minified script still holds its code")
}
