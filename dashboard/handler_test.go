package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/dashboard"
)

func get(tb testing.TB, s *stack, path string) (*http.Response, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, s.http.URL+path, nil)
	require.NoError(tb, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp, string(body)
}

// Every page and asset carries the strict policy, and no page holds
// inline code the policy would have to allow.
func TestPagesCarryAStrictCSPAndNoInlineCode(t *testing.T) {
	s := newStack(t, 0, 0, false)
	inline := regexp.MustCompile(`(?i)<script[^>]*>[^<]|\son[a-z]+\s*=|\sstyle\s*=|javascript:`)
	scripts := regexp.MustCompile(`(?i)<script[^>]*>`)
	for _, path := range []string{"/", "/search", "/record", "/fingerprints", "/signin", "/assets/app.css", "/assets/common.js", "/assets/overview.js", "/assets/search.js", "/assets/batch.js", "/assets/record.js", "/assets/stack.js", "/assets/signin.js", "/assets/fingerprints.js"} {
		resp, body := get(t, s, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, dashboard.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
		if strings.HasSuffix(path, ".js") {
			assert.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"), path)
			assert.NotContains(t, body, "innerHTML", "%s builds the DOM from text, never from HTML strings", path)
		}
		if !strings.Contains(path, ".") {
			assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
			assert.Empty(t, inline.FindAllString(body, -1), "%s has inline code", path)
			for _, tag := range scripts.FindAllString(body, -1) {
				assert.Regexp(t, `^<script src="/assets/[a-z]+\.js\?v=[0-9a-f]{12}" defer>$`, tag, "%s loads its scripts from the server, by version", path)
			}
			assert.NotContains(t, body, "http://", "%s loads nothing from elsewhere", path)
			assert.NotContains(t, body, "https://", "%s loads nothing from elsewhere", path)
		}
	}
	assert.Contains(t, dashboard.ContentSecurityPolicy, "script-src 'self';")
	assert.NotContains(t, dashboard.ContentSecurityPolicy, "unsafe")
	for _, path := range []string{"/assets/", "/assets/index.html", "/assets/nope.js", "/nope"} {
		resp, _ := get(t, s, path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	resp, _ := get(t, s, "/assets/..%2fdashboard.go")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a traversal is refused as a path that is not canonical")
}

// readEvent reads the next server-sent event of name from r.
func readEvent(tb testing.TB, r *bufio.Reader, name string, v any) {
	tb.Helper()
	var event string
	for {
		line, err := r.ReadString('\n')
		require.NoError(tb, err, "reading the event stream for a %s event", name)
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == name:
			require.NoError(tb, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), v))
			return
		}
	}
}

// The live stream sends the counts at once, then the records that change
// and the new counts, fed by the views bucket's watch.
func TestLiveStreamsCountsAndChangedRecords(t *testing.T) {
	s := newStack(t, 3, 1, false)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.http.URL+"/ui/v1/live", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	var c dashboard.Counts
	for c.Total != 4 { // the first counts may predate the last records
		readEvent(t, r, "counts", &c)
	}
	assert.Equal(t, 3, c.Views[aggregate.ViewToRetry])
	assert.Equal(t, 1, c.Views[aggregate.ViewUnrecoverable])

	s.succeed(t, s.greylisted[0])
	seen := false
	for !seen {
		var m struct {
			Records []dashboard.Changed `json:"records"`
		}
		readEvent(t, r, "records", &m)
		for _, ch := range m.Records {
			seen = seen || ch.ID == s.greylisted[0]
		}
	}
	for c.Views[aggregate.ViewSucceeded] != 1 {
		readEvent(t, r, "counts", &c)
	}
	assert.Equal(t, 2, c.Views[aggregate.ViewToRetry])
}

func TestLiveStreamsAreBounded(t *testing.T) {
	s := newStack(t, 0, 0, false)
	_ = s
	d, err := dashboard.New(dashboard.Config{Index: s.index, Events: eventsStub{}, MaxStreams: 1})
	require.NoError(t, err)
	background(t, d.Run)
	srv := newDataServer(t, d)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv+"/ui/v1/live", nil)
	first, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer first.Body.Close()
	require.Equal(t, http.StatusOK, first.StatusCode)
	second, err := http.DefaultClient.Get(srv + "/ui/v1/live")
	require.NoError(t, err)
	defer second.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, second.StatusCode)
}

func TestOriginalEventAndSchedule(t *testing.T) {
	s := newStack(t, 1, 0, false)
	id := s.greylisted[0]
	resp, body := get(t, s, "/ui/v1/records/"+id+"/event")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var ev dashboard.OriginalEvent
	require.NoError(t, json.Unmarshal([]byte(body), &ev))
	assert.Equal(t, "order_placed", ev.Event.Name)
	assert.Contains(t, string(ev.Event.Body), "ada+grey1@example.com")
	assert.Equal(t, "grey-1", ev.Aggregate.ID)

	resp, body = get(t, s, "/ui/v1/records/"+id+"/schedule?maxRetries=2&minBackoff=1")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var sch dashboard.Schedule
	require.NoError(t, json.Unmarshal([]byte(body), &sch))
	assert.True(t, sch.Proposed)
	assert.Equal(t, aggregate.RetrySpec{MaxRetries: 2, MinBackoff: 1, ExecutionTimeout: 30}, sch.Spec, "the unnamed field keeps the record's")
	assert.Len(t, sch.Attempts, 2)

	for _, c := range []struct{ path, field, msg string }{
		{"/schedule?maxRetries=-1", "maxRetries", "maxRetries must be a whole number from 0 to 2147483647, got \"-1\""},
		{"/schedule?minBackoff=x", "minBackoff", "minBackoff must be a whole number from 0 to 2147483647, got \"x\""},
		{"/schedule?maxRetries=63&minBackoff=1", "", "Retry backoff exceeds the supported millisecond range."},
	} {
		resp, body = get(t, s, "/ui/v1/records/"+id+c.path)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, resp.StatusCode, c.path)
		var e struct {
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		assert.Equal(t, c.msg, e.Message, c.path)
		if c.field != "" {
			assert.Equal(t, c.field, e.Details["field"], c.path)
		}
	}
	resp, body = get(t, s, "/ui/v1/records/no-such-record/event")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "no ExecutionFailed record with id no-such-record")
	resp, _ = get(t, s, "/ui/v1/records/"+strings.Repeat("x", 300)+"/schedule")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// The browser-only data refuses what it does not take, and an invalid id
// is told in words, not as the event store's sentinel ("eventstore:
// invalid").
func TestDataRefusesUnknownParametersAndExplainsBadIDs(t *testing.T) {
	s := newStack(t, 1, 0, false)
	for _, c := range []struct{ path, field string }{
		{"/ui/v1/live?x=1", "x"},
		{"/ui/v1/backlog?x=1", "x"},
		{"/ui/v1/records/" + s.greylisted[0] + "/event?x=1", "x"},
		{"/ui/v1/records/" + s.greylisted[0] + "/schedule?maxRetries=3&x=1", "x"},
		{"/ui/v1/records/" + s.greylisted[0] + "/schedule?maxRetries=3&maxRetries=4", "maxRetries"},
		{"/ui/v1/backlog?%zz", "query"},
	} {
		resp, body := get(t, s, c.path)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", c.path, body)
		var e struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		assert.Equal(t, c.field, e.Details["field"], c.path)
	}
	resp, body := get(t, s, "/ui/v1/records/%ff/event")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.NotContains(t, body, "eventstore")
	assert.Contains(t, body, "not valid UTF-8")
	resp, _ = get(t, s, "/ui/v1/records/"+s.greylisted[0]+"/schedule?maxRetries=3")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a parameter it takes still works")
}
