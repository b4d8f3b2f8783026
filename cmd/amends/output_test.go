package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// succeed makes record id SUCCEEDED.
func (e *apiEnv) succeed(tb testing.TB, id string) {
	tb.Helper()
	_, err := e.svc.Execute(tb.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(tb, err)
	res, err := e.svc.Execute(tb.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0}, aggregate.Meta{})
	require.NoError(tb, err)
	require.NoError(tb, e.index.WaitFor(tb.Context(), id, res.Version))
}

func TestJSONHasNoNullListsAndEveryView(t *testing.T) {
	e := newAPIEnv(t)
	e.create(t, 1)

	c := e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list", "-o", "json", "--processor", "Nobody"), c.stderr.String())
	assert.JSONEq(t, `{"items":[]}`, c.stdout.String(), "no match is an empty list, not null")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "summary", "-o", "json", "--processor", "Nobody"), c.stderr.String())
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &s))
	assert.Equal(t, map[string]any{"to-retry": 0.0, "executing": 0.0, "next-retry": 0.0, "non-retryable": 0.0, "succeeded": 0.0, "unrecoverable": 0.0}, s["views"])
	assert.Equal(t, []any{}, s["groups"])
	assert.Equal(t, []any{}, s["byStatus"])

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "summary", "-o", "json"), c.stderr.String())
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &s))
	assert.Len(t, s["views"], len(aggregate.Views), "views with 0 are there too: %v", s["views"])
}

func TestTableOutputNamesActiveFilters(t *testing.T) {
	e := newAPIEnv(t)
	e.create(t, 1)

	c := e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list", "--processor", "Nobody", "--filter", "errorCode=Timeout"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "no records match processor=Nobody, error-code=Timeout\n")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "summary", "--processor", "Nobody", "--view", "to-retry"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "\n0 records matching processor=Nobody, view=to-retry; to-retry 0")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list"), c.stderr.String())
	assert.NotContains(t, c.stdout.String(), "matching", "no filter, no hint")
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "summary"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "\n1 records; to-retry 1")
}

// Records the scheduler will not retry show no next retry.
func TestNoNextRetryForRecordsThatWillNotBeRetried(t *testing.T) {
	e := newAPIEnv(t)
	succeeded, exhausted, unrecoverable, open := e.create(t, 1), e.create(t, 2), e.create(t, 3), e.create(t, 4)
	e.succeed(t, succeeded)
	for id, cmd := range map[string]aggregate.Command{
		exhausted:     aggregate.ApplyRetrySpec{MaxRetries: 0, MinBackoff: 60, ExecutionTimeout: 60},
		unrecoverable: aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable},
	} {
		res, err := e.svc.Execute(t.Context(), id, cmd, aggregate.Meta{})
		require.NoError(t, err)
		require.NoError(t, e.index.WaitFor(t.Context(), id, res.Version))
	}

	c := e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list"), c.stderr.String())
	for id, want := range map[string]string{succeeded: `-$`, exhausted: `-$`, unrecoverable: `-$`, open: `in 1m \(2024-12-24 00:28:10Z\)$`} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+id+`\s.*\s`+want), c.stdout.String(), id)
	}
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "show", succeeded), c.stderr.String())
	assert.Regexp(t, `(?m)^next retry\s+-$`, c.stdout.String())
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "show", open), c.stderr.String())
	assert.Regexp(t, `(?m)^next retry\s+in 1m`, c.stdout.String())
}

func TestProgressRedrawsOnlyOnATerminal(t *testing.T) {
	var tty, plain bytes.Buffer
	for _, p := range []*progress{{w: &tty, tty: true, on: true, name: "prepare_compensation"}, {w: &plain, on: true, name: "prepare_compensation"}} {
		p.start(api.BatchStart{Total: 2})
		p.outcome(api.BatchOutcome{Outcome: api.OutcomeApplied})
		p.outcome(api.BatchOutcome{Outcome: api.OutcomeRejected})
		p.end()
	}
	assert.Equal(t, "\r[##########----------] 1/2: applied 1\r[####################] 2/2: applied 1, rejected 1\n", tty.String())
	assert.Equal(t, "prepare_compensation 1/2: applied 1\nprepare_compensation 2/2: applied 1, rejected 1\n", plain.String())
	assert.False(t, isTerminal(&plain), "a buffer is no terminal")
	f, err := createTemp(t)
	require.NoError(t, err)
	assert.False(t, isTerminal(f), "a regular file is no terminal")
}

func TestBatchWithRejectedRecordsExitsOne(t *testing.T) {
	e := newAPIEnv(t)
	e.create(t, 1)
	e.succeed(t, e.create(t, 2))

	c := e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "prepare", "--processor", "Mailer", "--dry-run"), "a dry run only reports: %s", c.stderr.String())
	assert.Contains(t, c.stdout.String(), "would-apply 1, would-reject 1")

	c = e.cli(operatorKey)
	assert.Equal(t, exitFailure, c.run(t, "prepare", "--processor", "Mailer", "--yes", "--request-id", "r-1"))
	assert.Contains(t, c.stdout.String(), "applied 1, rejected 1")
	assert.Contains(t, c.stderr.String(), "amends: 1 of 2 records were not changed (rejected 1)")

	c = e.cli(operatorKey)
	assert.Equal(t, exitFailure, c.run(t, "prepare", "--processor", "Mailer", "--yes", "--request-id", "r-1", "-o", "json"), "the stored result fails alike")
	var res api.BatchResult
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &res))
	assert.True(t, res.Replayed)
	assert.Contains(t, c.stderr.String(), "1 of 2 records were not changed")
}

// A server's rejection of a field names the flag that set it.
func TestServerFieldErrorsNameTheFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"code":"BadRequest","message":"executeAtFrom must be after 2000-01-01, got \"1999-01-01T00:00:00Z\"","details":{"field":"executeAtFrom"}}`))
	}))
	defer srv.Close()
	c := &cli{env: map[string]string{"AMENDS_SERVER": srv.URL}}
	assert.Equal(t, exitUsage, c.run(t, "list", "--since", "1999-01-01T00:00:00Z"))
	assert.Contains(t, c.stderr.String(), "amends: --since must be after 2000-01-01, got \"1999-01-01T00:00:00Z\"\n")

	c = &cli{env: map[string]string{"AMENDS_SERVER": srv.URL}}
	assert.Equal(t, exitFailure, c.run(t, "list", "--filter", "executeAtFrom=1999-01-01T00:00:00Z"), "--filter uses the API's names")
	assert.Contains(t, c.stderr.String(), "amends: executeAtFrom must be after")
}

func createTemp(tb testing.TB) (*os.File, error) {
	f, err := os.CreateTemp(tb.TempDir(), "stderr")
	if err == nil {
		tb.Cleanup(func() { _ = f.Close() })
	}
	return f, err
}

func TestBatchIdleTimeoutFollowsTheRate(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{{0, 30 * time.Second}, {50, 30 * time.Second}, {0.01, 200 * time.Second}} {
		bf := batchFlags{rate: tc.rate}
		assert.Equal(t, tc.want, bf.idle(30*time.Second), "rate %g", tc.rate)
	}
}

func TestRefusalDetailsNameTheAcceptedCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		details map[string]any
		want    string
	}{
		{"exhausted", map[string]any{"id": "r", "status": "FAILED", "retries": json.Number("10"), "maxRetries": json.Number("10"), "recoverable": "RECOVERABLE",
			"accepted": []any{"force_prepare_compensation"}},
			"(status FAILED, retries 10/10, recoverable RECOVERABLE; amends force-prepare would be accepted)"},
		{"succeeded", map[string]any{"status": "SUCCEEDED", "retries": json.Number("2"), "maxRetries": json.Number("10"), "accepted": []any{}},
			"(status SUCCEEDED, retries 2/10)"},
		{"running", map[string]any{"status": "PREPARED", "retries": json.Number("1"), "maxRetries": json.Number("3"), "timeoutAt": json.Number("1796153149316"), "accepted": []any{}},
			"(status PREPARED, retries 1/3, times out at 2026-12-01T19:25:49Z)"},
		{"no state", map[string]any{"id": "r"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, refusalDetails(&client.Error{Body: api.Error{Details: tc.details}}))
		})
	}
}
