package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/internal/silent"
)

// within runs f and fails the test if it does not return within 30 s
// (a hang is the bug these tests catch).
func within(tb testing.TB, f func() error) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		tb.Fatal("the call hung for 30 s despite its timeout")
		return nil
	}
}

func TestCallsTimeOutAgainstASilentServer(t *testing.T) {
	base := silent.Server(t)
	c, err := client.New(base, "", nil, client.WithTimeout(200*time.Millisecond))
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"list":    func() error { _, err := c.List(t.Context(), api.Query{}); return err },
		"count":   func() error { _, err := c.Count(t.Context(), api.Filter{}); return err },
		"summary": func() error { _, err := c.Summary(t.Context(), api.Filter{}); return err },
		"get":     func() error { _, err := c.Get(t.Context(), "x"); return err },
		"history": func() error { _, err := c.History(t.Context(), "x"); return err },
		"command": func() error {
			_, err := c.Prepare(t.Context(), "x", client.CommandOptions{})
			return err
		},
	} {
		err := within(t, call)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, client.ErrTimeout, name)
		assert.Contains(t, err.Error(), base+"/api/v1/", name)
		assert.Contains(t, err.Error(), ": no answer within 200ms", name)
		assert.NotContains(t, err.Error(), "client:", "%s: no package prefix in %q", name, err)
	}

	_, err = c.List(t.Context(), api.Query{Filter: api.Filter{Processor: "Mailer"}})
	assert.EqualError(t, err, "GET "+base+"/api/v1/records: no answer within 200ms", "the message names the request without its query")
}

func TestBatchIdleTimeout(t *testing.T) {
	t.Run("no answer", func(t *testing.T) {
		c, err := client.New(silent.Server(t), "", nil, client.WithIdleTimeout(200*time.Millisecond))
		require.NoError(t, err)
		err = within(t, func() error {
			_, err := c.Batch(t.Context(), "prepare_compensation", api.BatchRequest{DryRun: true}, client.BatchProgress{})
			return err
		})
		assert.ErrorIs(t, err, client.ErrTimeout)
		assert.Contains(t, err.Error(), "/api/v1/batch/prepare_compensation: no answer within 200ms")
	})

	t.Run("one line then silence", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = w.Write([]byte(`{"start":{"matched":3,"total":3}}` + "\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // stalls until the client gives up
		}))
		defer srv.Close()
		c, err := client.New(srv.URL, "", nil, client.WithIdleTimeout(2*time.Second), client.WithTimeout(time.Millisecond))
		require.NoError(t, err)
		var started []api.BatchStart
		err = within(t, func() error {
			_, err := c.Batch(t.Context(), "prepare_compensation", api.BatchRequest{DryRun: true},
				client.BatchProgress{Start: func(s api.BatchStart) { started = append(started, s) }})
			return err
		})
		assert.ErrorIs(t, err, client.ErrTimeout)
		assert.EqualError(t, err, "POST "+srv.URL+"/api/v1/batch/prepare_compensation: no line of the stream within 2s (after 1 lines)")
		assert.Equal(t, []api.BatchStart{{Matched: 3, Total: 3}}, started, "the line before the stall was delivered; WithTimeout does not cut a stream")
	})
}

func TestNewRejectsBadTimeouts(t *testing.T) {
	for _, o := range []client.Option{client.WithTimeout(0), client.WithTimeout(-time.Second), client.WithIdleTimeout(0)} {
		_, err := client.New("http://127.0.0.1:1", "", nil, o)
		assert.ErrorIs(t, err, client.ErrInvalidOption)
	}
}

// A caller's own cancellation is not reported as a timeout.
func TestCancelIsNotATimeout(t *testing.T) {
	c, err := client.New(silent.Server(t), "", nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.List(ctx, api.Query{})
	require.Error(t, err)
	assert.False(t, errors.Is(err, client.ErrTimeout), "%v", err)
}
