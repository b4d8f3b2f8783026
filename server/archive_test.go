package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/server"
)

// archiveEnv is the server env with an archive of one sweep of three
// records that succeeded, whose histories its event store does not hold
// (they were made on another JetStream, as if removed by retention), and
// an audit log.
func archiveEnv(t *testing.T) (*env, []string) {
	t.Helper()
	e := newEnv(t)
	elsewhere, err := jsstore.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	svc := aggregate.NewService(elsewhere)
	var recs []archive.Record
	var ids []string
	for i := range 3 {
		evt := fmt.Sprintf("evt-arch-%d", i)
		id := aggregate.RecordID(evt, fn)
		_, err := svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
			Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: t0,
		}, aggregate.Meta{Actor: "recorder"})
		require.NoError(t, err)
		_, err = svc.Execute(t.Context(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		_, err = svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		hist, err := elsewhere.Load(t.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(t, err)
		recs = append(recs, archive.Record{ID: id, Function: fn, Streams: hist})
		ids = append(ids, id)
	}
	sink, err := archive.OpenDir(t.TempDir())
	require.NoError(t, err)
	_, err = archive.WriteSweep(t.Context(), sink, 1, time.UnixMilli(t0), recs)
	require.NoError(t, err)
	store, err := jsstore.New(e.js)
	require.NoError(t, err)
	log, err := audit.Open(t.Context(), e.js, audit.Config{})
	require.NoError(t, err)
	return e.with(t, func(c *server.Config) {
		c.Archive = &server.Archive{Sink: sink, Store: store}
		c.Audit = log
	}), ids
}

// The archive's sweeps, a sweep's records page by page, and one record's
// history are read by a viewer.
func TestArchiveRoutesReadTheSweeps(t *testing.T) {
	e, ids := archiveEnv(t)

	var sweeps api.ArchiveSweeps
	r := e.do(t, "GET", "/api/v1/archive", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &sweeps)
	require.Len(t, sweeps.Sweeps, 1)
	assert.Equal(t, api.ArchiveSweep{Sweep: 1, CreatedAt: t0, Objects: 1, Records: 3, Streams: 9, Bytes: sweeps.Sweeps[0].Bytes}, sweeps.Sweeps[0])
	assert.Contains(t, sweeps.Archive, "dir:")

	var page api.ArchiveRecords
	r = e.do(t, "GET", "/api/v1/archive/1?limit=2", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &page)
	require.Len(t, page.Records, 2)
	require.NotEmpty(t, page.Next)
	got := []string{page.Records[0].ID, page.Records[1].ID}
	assert.Equal(t, aggregate.StatusSucceeded, page.Records[0].Status)
	assert.Equal(t, 3, page.Records[0].Versions)
	r = e.do(t, "GET", "/api/v1/archive/1?limit=2&cursor="+page.Next, viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	page = api.ArchiveRecords{}
	r.json(t, &page)
	require.Len(t, page.Records, 1)
	assert.Empty(t, page.Next, "the last page has no next")
	assert.ElementsMatch(t, ids, append(got, page.Records[0].ID), "the pages hold every record once")

	var h api.ArchivedHistory
	r = e.do(t, "GET", "/api/v1/archive/1/"+ids[0], viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &h)
	assert.Equal(t, ids[0], h.Record.ID)
	require.Len(t, h.History, 3)
	assert.Equal(t, uint64(1), h.History[0].Version)

	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/api/v1/archive/0", http.StatusBadRequest, "sweep"},
		{"/api/v1/archive/x", http.StatusBadRequest, "sweep"},
		{"/api/v1/archive/1?limit=5000", http.StatusBadRequest, "limit"},
		{"/api/v1/archive/1?color=red", http.StatusBadRequest, "color"},
		{"/api/v1/archive/9", http.StatusNotFound, ""},
		{"/api/v1/archive/1/" + uuid.NewString(), http.StatusNotFound, ""},
	} {
		r := e.do(t, "GET", c.path, viewerKey, nil)
		assert.Equal(t, c.status, r.status, "%s: %s", c.path, r.body)
		if c.field != "" {
			assert.Equal(t, c.field, r.apiError(t).Details["field"], c.path)
		}
	}
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/archive", "", nil).status)

	bare := newEnv(t)
	r = bare.do(t, "GET", "/api/v1/archive", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotConfigured", r.apiError(t).Code, "a server without an archive says so")
}

// A restore is an operator's: a dry run appends nothing; a restore gives
// the records their history (and so their views) back, once, and is
// audited; bad bodies are refused by field.
func TestArchiveRestoreIsDryRunnableAndAudited(t *testing.T) {
	e, ids := archiveEnv(t)
	restore := func(token string, body any) response {
		return e.do(t, "POST", "/api/v1/archive/1/restore", token, body)
	}
	assert.Equal(t, http.StatusForbidden, restore(viewerKey, map[string]any{"reason": "r", "dryRun": true}).status, "a viewer may not restore")
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"dryRun": true}, "reason"},
		{map[string]any{"reason": "r", "records": []string{"not-a-uuid"}}, "records"},
		{map[string]any{"reason": "r", "records": make([]string, api.MaxRestoreRecords+1)}, "records"},
		{map[string]any{"reason": "r", "color": "red"}, "color"},
	} {
		r := restore(operatorKey, c.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", c.body, r.body)
		assert.Equal(t, c.field, r.apiError(t).Details["field"], "%v", c.body)
	}

	before := e.lastSeq(t)
	var res api.ArchiveRestoreResult
	r := restore(operatorKey, map[string]any{"reason": "customer asks", "dryRun": true, "records": []string{ids[0]}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &res)
	assert.True(t, res.DryRun)
	assert.Equal(t, []api.RestoredRecord{{ID: ids[0], Outcome: archive.Restored, Appended: 3}}, res.Results)
	assert.Equal(t, before, e.lastSeq(t), "a dry run appends nothing")

	missing := uuid.NewString()
	r = restore(operatorKey, map[string]any{"reason": "customer asks", "records": []string{ids[0], missing}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	res = api.ArchiveRestoreResult{}
	r.json(t, &res)
	assert.Equal(t, map[string]int{archive.Restored: 1}, res.Counts)
	assert.Equal(t, []string{missing}, res.Missing, "a record the sweep does not hold is named")
	require.Eventually(t, func() bool {
		return e.do(t, "GET", "/api/v1/records/"+ids[0], viewerKey, nil).status == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond, "the restored record is queryable again")

	r = restore(operatorKey, map[string]any{"reason": "the rest"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	res = api.ArchiveRestoreResult{}
	r.json(t, &res)
	assert.Equal(t, map[string]int{archive.Restored: 2, archive.Present: 1}, res.Counts, "a record restored before is present")

	var log api.AuditPage
	r = e.do(t, "GET", "/api/v1/audit?kind=archive_restore", operatorKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &log)
	require.Len(t, log.Entries, 2, "each restore is audited, the dry run is not")
	assert.Equal(t, "bob", log.Entries[0].Actor)
	assert.Contains(t, log.Entries[0].Reason, "sweep 1")
	assert.Contains(t, log.Entries[0].Reason, "customer asks")
}
