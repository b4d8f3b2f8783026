package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/silent"
)

// runWithin runs the command line and fails the test if it hangs.
func (c *cli) runWithin(tb testing.TB, args ...string) int {
	tb.Helper()
	done := make(chan int, 1)
	go func() { done <- c.run(tb, args...) }()
	select {
	case code := <-done:
		return code
	case <-time.After(waitLimit):
		tb.Fatalf("amends %v hung for %s despite its timeout", args, waitLimit)
		return -1
	}
}

func TestClientCommandsTimeOut(t *testing.T) {
	base := silent.Server(t)
	for _, args := range [][]string{
		{"list"}, {"summary"}, {"show", "some-id"}, {"history", "some-id"},
		{"prepare", "some-id"}, {"mark-recoverable", "some-id", "RECOVERABLE"},
		{"retry-spec", "some-id", "--max-retries", "1", "--min-backoff", "1", "--execution-timeout", "1"},
		{"change-function", "some-id", "--context", "c", "--processor", "p", "--name", "n", "--kind", "EVENT", "--reason", "r"},
		{"prepare", "--processor", "Mailer", "--dry-run"},
	} {
		c := &cli{env: map[string]string{"AMENDS_SERVER": base}}
		code := c.runWithin(t, append(args, "--timeout", "300ms")...)
		assert.Equal(t, exitFailure, code, "%v: %s", args, c.stderr.String())
		assert.Contains(t, c.stderr.String(), base+"/api/v1/", args)
		assert.Contains(t, c.stderr.String(), ": no answer within 300ms; raise --timeout or check the server", args)
	}

	c := &cli{env: map[string]string{"AMENDS_SERVER": base, "AMENDS_TIMEOUT": "200ms"}}
	assert.Equal(t, exitFailure, c.runWithin(t, "list", "--processor", "Mailer"))
	assert.Equal(t, "amends: GET "+base+"/api/v1/records: no answer within 200ms; raise --timeout or check the server\n", c.stderr.String(),
		"AMENDS_TIMEOUT is a connection setting")
}

// A batch streams its progress: it fails when no line comes for
// --timeout, and says how to read the result of a run that may go on.
func TestBatchFailsWhenItsStreamStalls(t *testing.T) {
	var requests sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		defer requests.Done()
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write([]byte(`{"start":{"matched":2,"total":2}}` + "\n" + `{"outcome":{"id":"r1","outcome":"applied"}}` + "\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := &cli{env: map[string]string{"AMENDS_SERVER": srv.URL}}
	code := c.runWithin(t, "prepare", "--processor", "Mailer", "--yes", "--request-id", "inc-7", "--timeout", "2s")
	assert.Equal(t, exitFailure, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "prepare_compensation 1/2: applied 1\n", "the line before the stall was shown")
	assert.Contains(t, c.stderr.String(), "amends: POST "+srv.URL+"/api/v1/batch/prepare_compensation: no line of the stream within 2s (after 2 lines); "+
		"the batch may still be running on the server: send it again with --request-id inc-7 to read its result, or raise --timeout\n")
	requests.Wait()
}

func TestTimeoutFlagIsChecked(t *testing.T) {
	for _, v := range []string{"0s", "-1s"} {
		c := &cli{env: map[string]string{"AMENDS_SERVER": "http://127.0.0.1:1"}}
		assert.Equal(t, exitUsage, c.run(t, "list", "--timeout", v))
		assert.Contains(t, c.stderr.String(), "--timeout must be positive")
	}
	c := &cli{env: map[string]string{"AMENDS_TIMEOUT": "soon"}}
	assert.Equal(t, exitUsage, c.run(t, "list"))
	assert.Contains(t, c.stderr.String(), `environment variable AMENDS_TIMEOUT="soon" is not a valid value for --timeout: want a duration such as 30s, 5m or 1h`+"\n")
}
