package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The requests of one run of a client command carry one new trace, and
// the next run another (issue 30, item 17).
func TestClientCommandsSendATraceparent(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
		if r.URL.Path == "/api/v1/count" {
			_, _ = w.Write([]byte(`{"count": 0}`))
			return
		}
		_, _ = w.Write([]byte(`{"items": []}`))
	}))
	defer srv.Close()
	var c cli
	require.Equal(t, exitOK, c.run(t, "list", "--server", srv.URL), c.stderr.String())
	require.Equal(t, exitOK, c.run(t, "list", "--server", srv.URL), c.stderr.String())
	require.Len(t, got, 4, "list and count, twice")
	re := regexp.MustCompile(`^00-([0-9a-f]{32})-[0-9a-f]{16}-01$`)
	var traces []string
	for _, tp := range got {
		m := re.FindStringSubmatch(tp)
		require.NotNil(t, m, "a W3C traceparent, sampled: %q", tp)
		traces = append(traces, m[1])
	}
	assert.Equal(t, traces[0], traces[1], "one run, one trace")
	assert.Equal(t, traces[2], traces[3])
	assert.NotEqual(t, traces[0], traces[2], "each run its own")
}
