package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/fanout"
	"github.com/amends-dev/amends/server"
)

// A dry run over 1 000 records says what a real run then does, and the
// real run is idempotent by request id.
func TestBatchDryRunThenRealRunOnAThousandRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 1 000 records")
	}
	e := newEnv(t)
	const n = 1000
	for i := range n {
		e.create(t, i, nil)
	}
	// 10 of them are already prepared: prepare would be refused there.
	var p api.Page
	e.do(t, "GET", "/api/v1/records?limit=10", viewerKey, nil).json(t, &p)
	for _, it := range p.Items {
		res, err := e.svc.Execute(t.Context(), it.ID, aggregate.PrepareCompensation{}, aggregate.Meta{})
		require.NoError(t, err)
		e.wait(t, it.ID, res.Version)
	}

	filter := map[string]any{"processor": "Mailer"}
	var dry api.BatchResult
	r := e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, map[string]any{"filter": filter, "dryRun": true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &dry)
	assert.Equal(t, n, dry.Matched)
	assert.Equal(t, map[string]int{api.OutcomeWould: n - 10, api.OutcomeWouldNot: 10}, dry.Counts)
	require.Len(t, dry.Records, n)
	var c api.CountResponse
	e.do(t, "GET", "/api/v1/count?status=PREPARED", viewerKey, nil).json(t, &c)
	assert.Equal(t, 10, c.Count, "a dry run touches nothing")

	body := map[string]any{"filter": filter, "requestId": "incident-42", "ratePerSecond": 1000, "reason": "smtp back"}
	var real api.BatchResult
	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &real)
	assert.True(t, real.Complete)
	assert.Equal(t, map[string]int{api.OutcomeApplied: n - 10, api.OutcomeRejected: 10}, real.Counts)
	for i, o := range real.Records {
		want := api.OutcomeApplied
		if dry.Records[i].Outcome == api.OutcomeWouldNot {
			want = api.OutcomeRejected
			assert.Equal(t, "ExecutionFailed can not retry.", o.Message)
		}
		assert.Equal(t, dry.Records[i].ID, o.ID)
		assert.Equal(t, want, o.Outcome, "record %s did what the dry run said", o.ID)
	}

	// The same request again returns the stored result and prepares nothing.
	var again api.BatchResult
	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, body)
	require.Equal(t, http.StatusOK, r.status)
	r.json(t, &again)
	assert.True(t, again.Replayed)
	assert.Equal(t, real.Counts, again.Counts)
	var h []api.HistoryEntry
	e.do(t, "GET", "/api/v1/records/"+real.Records[n-1].ID+"/history", viewerKey, nil).json(t, &h)
	assert.Len(t, h, 2, "created and prepared once")
	assert.Equal(t, "bob", h[0].Actor)
	assert.Equal(t, "smtp back", h[0].Reason)
	assert.Equal(t, "incident-42", h[0].RequestID)

	// The request id with another body is refused.
	body["filter"] = map[string]any{"processor": "Other"}
	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, body)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Equal(t, "RequestIDReused", r.apiError(t).Code)
}

func TestBatchStreamsOutcomes(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		e.create(t, i, nil)
	}
	r := e.do(t, "POST", "/api/v1/batch/force_prepare_compensation", operatorKey,
		map[string]any{"requestId": "r-1", "reason": "test", "ratePerSecond": 1000}, "Accept", "application/x-ndjson")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	assert.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
	var lines []api.BatchLine
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var l api.BatchLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		lines = append(lines, l)
	}
	require.Len(t, lines, 5, "the start, one line per record and the result")
	assert.Equal(t, &api.BatchStart{Matched: 3, Total: 3}, lines[0].Start)
	for _, l := range lines[1:4] {
		assert.Equal(t, api.OutcomeApplied, l.Outcome.Outcome)
	}
	require.NotNil(t, lines[4].Result)
	assert.Equal(t, 3, lines[4].Result.Counts[api.OutcomeApplied])
}

func TestBatchRequestErrors(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name, command string
		body          any
		status        int
		msg           string
	}{
		{"no request id", "prepare_compensation", map[string]any{}, http.StatusBadRequest, "a real batch needs a requestId"},
		{"force without reason", "force_prepare_compensation", map[string]any{"requestId": "x"}, http.StatusBadRequest, "force_prepare_compensation needs a reason"},
		{"unknown field", "prepare_compensation", map[string]any{"dry_run": true}, http.StatusBadRequest, `unknown field "dry_run"`},
		{"rate", "prepare_compensation", map[string]any{"dryRun": true, "ratePerSecond": 5000}, http.StatusBadRequest, "ratePerSecond must be between"},
		{"limit", "prepare_compensation", map[string]any{"dryRun": true, "limit": 20000}, http.StatusBadRequest, "limit must be between 1 and 10000"},
		{"bad view", "prepare_compensation", map[string]any{"dryRun": true, "filter": map[string]string{"view": "soon"}}, http.StatusBadRequest, "view"},
		{"other command", "mark_recoverable", map[string]any{}, http.StatusNotFound, "batches run prepare_compensation or force_prepare_compensation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", "/api/v1/batch/"+c.command, operatorKey, c.body)
			assert.Equal(t, c.status, r.status, string(r.body))
			assert.Contains(t, r.apiError(t).Message, c.msg)
		})
	}
}

// A batch's filter as the client sends it (a marshalled projection.Filter,
// times as RFC 3339 strings) reads as the list's filter does.
func TestBatchFilterAsTheClientSendsIt(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		e.create(t, i, nil)
	}
	req := api.BatchRequest{DryRun: true, Filter: api.Filter{
		Processor: "Mailer", Status: aggregate.StatusFailed, Recoverable: aggregate.RecoverabilityUnknown, FunctionKind: aggregate.KindEvent,
		ExecuteAtFrom: time.UnixMilli(t0 + 1).UTC(), ExecuteAtTo: time.UnixMilli(t0 + 10).UTC(), MinRetries: 0,
		View: aggregate.ViewToRetry, Now: time.UnixMilli(t0 + 100_000_000).UTC(),
	}}
	var res api.BatchResult
	r := e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, req)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &res)
	assert.Equal(t, 2, res.Matched, "records 1 and 2 are from t0+1 on")
	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, `{"dryRun":true,"filter":{"executeAtFrom":`+strconv.FormatInt(t0+2, 10)+`,"minRetries":0}}`)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.json(t, &res)
	assert.Equal(t, 1, res.Matched, "times may be epoch milliseconds")
}

// brokenGets is an index whose record reads fail as a store would.
type brokenGets struct {
	server.Queries
	err error
}

func (b brokenGets) Get(context.Context, string) (api.View, error) {
	return api.View{}, b.err
}

// A record that fails in a batch for a reason other than a refusal gets an
// outcome that says what to do, without the error's Go internals.
func TestBatchOutcomeOfAFailedRecordShowsNoInternals(t *testing.T) {
	e := newEnv(t)
	e.create(t, 1, nil)
	for err, want := range map[error]api.BatchOutcome{
		fmt.Errorf("record x has no view: %w", projection.ErrNotFound):        {Outcome: api.OutcomeFailed, Code: "NotFound", Message: "the record has no view any more"},
		fmt.Errorf("read the view of record x: %w", nats.ErrConnectionClosed): {Outcome: api.OutcomeFailed, Code: "Unavailable", Message: "the server could not reach NATS; run the batch again with the same requestId"},
		errors.New("jsstore: decode: projection: corrupt view"):               {Outcome: api.OutcomeFailed, Code: "Internal", Message: "internal error; the server log has the details"},
	} {
		b := e.with(t, func(c *server.Config) { c.Queries = brokenGets{Queries: e.index, err: err} })
		var res api.BatchResult
		r := b.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, map[string]any{"dryRun": true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		r.json(t, &res)
		require.Len(t, res.Records, 1)
		got := res.Records[0]
		got.ID = ""
		assert.Equal(t, want, got, "outcome of %v", err)
	}
}

// A batch entry or an Idempotency-Key that does not validate (written by
// something else) answered 500 for ever. It is taken over: the batch runs
// (each record's command id makes a repeat a duplicate), the command
// passes.
func TestBatchEntriesThatDoNotValidateAreTakenOver(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 0, nil)
	sum := sha256.Sum256([]byte("r-bad"))
	_, err := e.js.Publish(t.Context(), "$KV."+server.DefaultBatchBucket+".b_"+hex.EncodeToString(sum[:20]), []byte(`{"running":tru`))
	require.NoError(t, err)
	r := e.do(t, "POST", "/api/v1/batch/force_prepare_compensation", operatorKey, map[string]any{"requestId": "r-bad", "reason": "test", "ratePerSecond": 1000})
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	key := sha256.Sum256([]byte("idem-1"))
	_, err = e.js.Publish(t.Context(), "$KV."+server.DefaultBatchBucket+".k_"+hex.EncodeToString(key[:20]), []byte(`{"hash":"","at":9000000000000000}`))
	require.NoError(t, err)
	r = e.do(t, "POST", "/api/v1/records/"+id+"/force_prepare_compensation", operatorKey, map[string]any{"reason": "again"}, "Idempotency-Key", "idem-1")
	assert.NotEqual(t, http.StatusInternalServerError, r.status, string(r.body))
	assert.NotEqual(t, http.StatusUnprocessableEntity, r.status, string(r.body))
}

// brokenLists answers every list with err.
type brokenLists struct {
	server.Queries
	err error
}

func (b brokenLists) List(api.Query) (api.Page, error) { return api.Page{}, b.err }

// A list asked across instances, some of which did not answer for their
// partitions, is a 503 that names them, not a short page.
func TestAListMissingPartitionsIsA503ThatNamesThem(t *testing.T) {
	e := newEnv(t)
	inc := &fanout.Incomplete{Coverage: fanout.Coverage{Missing: []string{"Mailer/1/2"}, Unanswered: []fanout.Unanswered{{Instance: "b", Reason: "no reply within 5s"}}}}
	b := e.with(t, func(c *server.Config) { c.Queries = brokenLists{Queries: e.index, err: inc} })
	r := b.do(t, "GET", "/api/v1/records", operatorKey, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	var body api.Error
	r.json(t, &body)
	assert.Equal(t, "PartitionsMissing", body.Code)
	assert.Contains(t, body.Message, "Mailer/1/2")
	assert.Contains(t, body.Message, "b: no reply within 5s")
	assert.Equal(t, []any{"Mailer/1/2"}, body.Details["missing"])
}
