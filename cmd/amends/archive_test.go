package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

func TestArchiveListShowAndRestore(t *testing.T) {
	// Given a NATS server, two records that succeeded, archived in sweep 1 and removed
	srv := natstest.NewListening(t)
	js := connectJS(t, srv.ClientURL())
	// A short duplicate window: restore appends the streams with their
	// ids, which JetStream remembers that long after they were appended.
	store, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context), jsstore.WithDuplicateWindow(time.Second))
	require.NoError(t, err)
	svc := aggregate.NewService(store)
	f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "send"}
	var recs []archive.Record
	for i := range 2 {
		evt := fmt.Sprintf("evt-%d", i)
		id := aggregate.RecordID(evt, f)
		_, err := svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1"}, Version: 1},
			Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: t0,
			RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 30},
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		_, err = svc.Execute(t.Context(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		_, err = svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		hist, err := store.Load(t.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(t, err)
		recs = append(recs, archive.Record{ID: id, Function: f, Streams: hist})
	}
	dir := t.TempDir()
	sink, err := archive.OpenDir(dir)
	require.NoError(t, err)
	_, err = archive.WriteSweep(t.Context(), sink, 1, time.UnixMilli(t0), recs)
	require.NoError(t, err)
	for _, r := range recs {
		_, err := store.Remove(t.Context(), aggregate.RecordAggregate(r.ID), r.Streams[len(r.Streams)-1].Seq)
		require.NoError(t, err)
	}
	spec := "dir:" + dir

	// When the archive is listed and shown
	var c cli
	require.Equal(t, 0, c.run(t, "archive", "list", "--archive", spec, "-o", "json"), c.stderr.String())
	var sweeps listJSON[api.ArchiveSweep]
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &sweeps))
	list := sweeps.Items
	require.Len(t, list, 1)
	assert.Equal(t, api.ArchiveSweep{Sweep: 1, CreatedAt: t0, Objects: 1, Records: 2, Streams: 6, Bytes: list[0].Bytes}, list[0])

	c = cli{}
	require.Equal(t, 0, c.run(t, "archive", "show", "--archive", spec, "--sweep", "1"), c.stderr.String())
	for _, r := range recs {
		assert.Contains(t, c.stdout.String(), r.ID)
	}
	assert.Contains(t, c.stdout.String(), "SUCCEEDED")
	c = cli{}
	require.Equal(t, 0, c.run(t, "archive", "show", "--archive", spec, "--sweep", "1", "--record", recs[0].ID), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "execution_success_applied")

	// Then a restore without --yes or --dry-run is refused, a dry run appends nothing
	c = cli{}
	assert.Equal(t, 2, c.run(t, "archive", "restore", "--archive", spec, "--sweep", "1", "--nats-url", srv.ClientURL()))
	assert.Contains(t, c.stderr.String(), "--dry-run (to see what it would do) or --yes")
	c = cli{}
	require.Equal(t, 0, c.run(t, "archive", "restore", "--archive", spec, "--sweep", "1", "--nats-url", srv.ClientURL(), "--dry-run", "--record", recs[0].ID), c.stderr.String())
	assert.Contains(t, c.stdout.String(), recs[0].ID+"  restored")
	assert.NotContains(t, c.stdout.String(), recs[1].ID, "--record restores only that record")
	_, err = store.LoadLast(t.Context(), aggregate.RecordAggregate(recs[0].ID))
	require.ErrorIs(t, err, eventstore.ErrNotFound, "a dry run appends nothing")

	// And --yes brings the history back as it was
	require.Eventually(t, func() bool {
		c = cli{}
		return c.run(t, "archive", "restore", "--archive", spec, "--sweep", "1", "--nats-url", srv.ClientURL(), "--yes") == 0
	}, waitLimit, 50*time.Millisecond, "restore once the duplicate window has passed")
	for _, r := range recs {
		got, err := store.Load(t.Context(), aggregate.RecordAggregate(r.ID), 1)
		require.NoError(t, err)
		require.Len(t, got, len(r.Streams))
		for i := range got {
			assert.Equal(t, r.Streams[i].ID, got[i].ID)
		}
		last, _ := aggregate.CarriedState(got[len(got)-1])
		assert.Equal(t, aggregate.StatusSucceeded, last.Status)
	}
	c = cli{}
	require.Equal(t, 0, c.run(t, "archive", "restore", "--archive", spec, "--sweep", "1", "--nats-url", srv.ClientURL(), "--yes"))
	assert.Contains(t, c.stdout.String(), "present", "a second restore appends nothing")
}

func TestArchiveRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"archive", "list"}, "--archive is required"},
		{[]string{"archive", "list", "--archive", "s3:x"}, `--archive: "s3:x" must be dir:/path or objectstore:BUCKET`},
		{[]string{"archive", "list", "--archive", "objectstore:B"}, "--archive objectstore:B needs --nats-url"},
		{[]string{"archive", "list", "--archive", "dir:/tmp", "-o", "yaml"}, "--output must be table or json"},
		{[]string{"archive", "show", "--archive", "dir:/tmp"}, "--sweep is required"},
		{[]string{"archive", "show", "--archive", "dir:/tmp", "--sweep", "1", "--record", "a\x01b"}, "--record"},
		{[]string{"archive", "restore", "--archive", "dir:/tmp", "--sweep", "1", "--yes"}, "restore needs --nats-url"},
		{[]string{"archive", "restore", "--archive", "dir:/tmp", "--sweep", "1", "--yes", "--dry-run", "--nats-url", "nats://127.0.0.1:1"}, "not both"},
	} {
		var c cli
		assert.Equal(t, 2, c.run(t, tc.args...), "%v: a usage error", tc.args)
		assert.Contains(t, c.stderr.String(), tc.want, "%v", tc.args)
	}
	var c cli
	assert.Equal(t, exitNotFound, c.run(t, "archive", "show", "--archive", "dir:"+t.TempDir(), "--sweep", "3")) // a sweep the archive lacks is not found (4)
	assert.Contains(t, c.stderr.String(), "has no sweep-000000000003.manifest.json")
}
