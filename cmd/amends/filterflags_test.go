package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The next-retry range flags reach the API as nextRetryAtFrom and
// nextRetryAtTo.
func TestNextRetryRangeFlags(t *testing.T) {
	var mu sync.Mutex
	var got url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.URL.Query()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items":[],"next":""}`))
	}))
	defer srv.Close()
	c := &cli{env: map[string]string{"AMENDS_SERVER": srv.URL}}
	require.Equal(t, exitOK, c.run(t, "list", "--next-retry-since", "2026-01-01T00:00:00Z", "--next-retry-until", "1767312000000"), c.stderr.String())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "2026-01-01T00:00:00Z", got.Get("nextRetryAtFrom"))
	assert.Equal(t, "2026-01-02T00:00:00Z", got.Get("nextRetryAtTo"), "epoch ms are sent as RFC 3339")
}
