package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/dashboard"
	"github.com/amends-dev/amends/server"
)

// signInAt signs in to the stack with token and returns the cookie and
// the CSRF token.
func signInAt(t *testing.T, s *stack, token string) (cookie, csrf string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", s.http.URL+"/ui/v1/session", strings.NewReader(`{"token":"`+token+`"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", s.http.URL)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var info server.SessionInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	for _, c := range resp.Cookies() {
		if c.Name == server.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	return cookie, info.CSRF
}

// The live stream used to go on sending record ids and counts for as long
// as the browser kept it open after DELETE /ui/v1/session answered 204.
func TestSignOutClosesTheLiveStream(t *testing.T) {
	s := newStack(t, 1, 0, true)
	cookie, csrf := signInAt(t, s, viewerToken)
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.http.URL+"/ui/v1/live", nil)
	require.NoError(t, err)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	readEvent(t, br, "counts", &dashboard.Counts{})

	out, err := http.NewRequestWithContext(t.Context(), "DELETE", s.http.URL+"/ui/v1/session", nil)
	require.NoError(t, err)
	out.Header.Set("Cookie", cookie)
	out.Header.Set("Origin", s.http.URL)
	out.Header.Set(server.CSRFHeader, csrf)
	gone, err := http.DefaultClient.Do(out)
	require.NoError(t, err)
	gone.Body.Close()
	require.Equal(t, http.StatusNoContent, gone.StatusCode)

	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		ended <- err
	}()
	select {
	case err := <-ended:
		assert.True(t, err == nil || errors.Is(err, io.ErrUnexpectedEOF), "the stream ends: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the live stream outlived its session by 20 s")
	}
}

// Every read of an original event goes to the audit log first: who read
// which record's payload, from where. A read that cannot be recorded is
// refused.
func TestOriginalEventReadsAreAudited(t *testing.T) {
	var log *audit.Log
	s := newStack(t, 1, 0, true, func(st *stackSetup) {
		var err error
		log, err = audit.Open(t.Context(), st.js, audit.Config{Storage: jetstream.MemoryStorage})
		require.NoError(t, err)
		st.dash.Audit = log
	})
	id := s.greylisted[0]
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.http.URL+"/ui/v1/records/"+id+"/event", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page, err := log.Query(t.Context(), audit.Query{Kind: api.AuditEventRead})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	e := page.Entries[0]
	assert.Equal(t, "alice", e.Actor)
	assert.Equal(t, "viewer", e.Role)
	assert.Equal(t, id, e.Record)
	assert.NotEmpty(t, e.Event)
	assert.Equal(t, "127.0.0.1", e.Client)

	// The audit log cannot be written: the payload is not sent.
	failing := newStack(t, 1, 0, true, func(st *stackSetup) { st.dash.Audit = failingAudit{} })
	req, err = http.NewRequestWithContext(t.Context(), "GET", failing.http.URL+"/ui/v1/records/"+failing.greylisted[0]+"/event", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotContains(t, string(body), "ada+", "no payload without its audit entry")
}

type failingAudit struct{}

func (failingAudit) Record(_ context.Context, _ api.AuditEntry) error {
	return errors.New("the audit stream is down")
}
