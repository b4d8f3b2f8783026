package projection_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/quarantine"
)

// snapEnv is a views bucket filled by hand (no projector), a snapshot
// bucket and a quarantine.
type snapEnv struct {
	*env
	snaps *projection.Snapshots
	quar  *quarantine.Quarantine
}

func newSnapEnv(t *testing.T) *snapEnv {
	t.Helper()
	e := newEnv(t)
	snaps, err := projection.OpenSnapshots(t.Context(), e.js, projection.WithSnapshotStorage(jetstream.MemoryStorage, 1))
	require.NoError(t, err)
	q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	return &snapEnv{env: e, snaps: snaps, quar: q}
}

// view is a valid view of record id at version v.
func snapView(id string, v uint64) api.View {
	return api.View{
		State: aggregate.State{ID: id, EventID: aggregate.EventID{ID: "evt-" + id, AggregateID: aggregate.WireAggregateID{ContextName: "order",
			AggregateName: "order", AggregateID: "o-" + id, TenantID: aggregate.DefaultTenantID}, Version: 1},
			Function: fnA, Error: aggregate.ErrorDetails{ErrorCode: "E", ErrorMsg: "boom", Fingerprint: "fp"},
			ExecuteAt: t0.UnixMilli(), Status: aggregate.StatusFailed, Recoverable: aggregate.RecoverabilityUnknown},
		Version: v,
	}
}

func (e *snapEnv) put(t *testing.T, id string, v uint64) uint64 {
	t.Helper()
	raw, err := json.Marshal(snapView(id, v))
	require.NoError(t, err)
	rev, err := e.views.Put(t.Context(), keyOf(t, e.views, id), raw)
	require.NoError(t, err)
	return rev
}

func (e *snapEnv) putView(t *testing.T, v api.View) {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	key, err := projection.ViewKey(v.State.Function.ProcessorName, v.State.ID)
	require.NoError(t, err)
	_, err = e.views.Put(t.Context(), key, raw)
	require.NoError(t, err)
}

func (e *snapEnv) del(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, e.views.Delete(t.Context(), keyOf(t, e.views, id)))
}

func (e *snapEnv) index(t *testing.T, every time.Duration) *projection.Index {
	t.Helper()
	return e.env.index(t, projection.WithSnapshots(e.snaps, every), projection.WithIndexQuarantine(e.quar))
}

// versions returns the version of every record the index holds.
func versions(t *testing.T, ix *projection.Index) map[string]uint64 {
	t.Helper()
	p, err := ix.List(api.Query{Limit: api.MaxLimit})
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, it := range p.Items {
		out[it.ID] = it.Version
	}
	return out
}

// eventuallyHolds waits until the index holds exactly want.
func eventuallyHolds(t *testing.T, ix *projection.Index, want map[string]uint64) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("the index holds %v", want), func() bool { return assert.ObjectsAreEqual(want, versions(t, ix)) })
}

func (e *snapEnv) snapshotInfo(t *testing.T) index.SnapshotInfo {
	t.Helper()
	data, err := e.snaps.Load(t.Context(), projection.DefaultBucket)
	require.NoError(t, err)
	info, err := index.ReadSnapshotInfo(data)
	require.NoError(t, err)
	return info
}

func (e *snapEnv) lastRev(t *testing.T) uint64 { return lastRevision(t, e.views) }

// lastRevision is the last revision of the views bucket.
func lastRevision(t *testing.T, views *projection.Views) uint64 {
	t.Helper()
	st, err := views.Status(t.Context())
	require.NoError(t, err)
	return st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
}

// Given an index that saved its snapshot when it stopped, when views are
// updated, deleted, created, and deleted and created again at a lower
// version while it is down, then a new index starts from the snapshot,
// reads only the changes since, holds what the bucket holds, and its
// watch goes on with later puts and deletes.
func TestIndexStartsFromItsSnapshot(t *testing.T) {
	e := newSnapEnv(t)
	for i := 1; i <= 4; i++ {
		e.put(t, fmt.Sprintf("r%d", i), 5)
	}
	first := e.index(t, time.Hour)
	stop := run(t, first)
	<-first.Ready()
	assert.False(t, first.Start().FromSnapshot, "no snapshot yet")
	eventuallyHolds(t, first, map[string]uint64{"r1": 5, "r2": 5, "r3": 5, "r4": 5})
	stop() // saves the snapshot
	info := e.snapshotInfo(t)
	assert.Equal(t, e.lastRev(t), info.Revision, "the snapshot is of the last revision")
	assert.Equal(t, 4, info.Records)

	e.put(t, "r1", 6)
	e.del(t, "r2")
	e.put(t, "r5", 1)
	e.del(t, "r3")
	e.put(t, "r3", 1) // re-opened: its deletion marker is gone, its version lower

	second := e.index(t, time.Hour)
	run(t, second)
	<-second.Ready()
	st := second.Start()
	assert.True(t, st.FromSnapshot, "started from the snapshot")
	assert.Equal(t, info.Revision, st.SnapshotRevision)
	assert.Positive(t, st.SnapshotLoad, "the snapshot's read and decode")
	assert.LessOrEqual(t, st.SnapshotLoad, st.Took, "a part of the start")
	want := map[string]uint64{"r1": 6, "r3": 1, "r4": 5, "r5": 1}
	assert.Equal(t, want, versions(t, second), "what the bucket holds, right at Ready")
	require.NoError(t, second.Healthy())

	e.put(t, "r6", 2)
	e.del(t, "r4")
	e.put(t, "r1", 7)
	eventuallyHolds(t, second, map[string]uint64{"r1": 7, "r3": 1, "r5": 1, "r6": 2})
	n, err := second.Count(api.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	qe, err := e.quar.All(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	assert.Empty(t, qe, "nothing quarantined")
}

// A snapshot that cannot be used is quarantined (but for a missing one)
// and the index loads the bucket in full, holding exactly what it holds.
func TestIndexFallsBackToAFullLoad(t *testing.T) {
	cases := map[string]struct {
		// spoil runs with the snapshot saved at revision rev.
		spoil       func(t *testing.T, e *snapEnv)
		quarantined string // "" for none
	}{
		"missing": {
			spoil: func(t *testing.T, e *snapEnv) {
				require.NoError(t, e.snaps.Delete(t.Context(), projection.DefaultBucket))
			},
		},
		"corrupt": {
			spoil: func(t *testing.T, e *snapEnv) {
				data, err := e.snaps.Load(t.Context(), projection.DefaultBucket)
				require.NoError(t, err)
				data[len(data)/2] ^= 1
				require.NoError(t, e.snaps.Save(t.Context(), projection.DefaultBucket, data))
			},
			quarantined: "checksum",
		},
		"not a snapshot": {
			spoil: func(t *testing.T, e *snapEnv) {
				require.NoError(t, e.snaps.Save(t.Context(), projection.DefaultBucket, []byte("hello")))
			},
			quarantined: "not an index snapshot",
		},
		"the bucket created again": {
			spoil: func(t *testing.T, e *snapEnv) {
				require.NoError(t, e.js.DeleteKeyValue(t.Context(), projection.DefaultBucket))
				e.views = natstest.Recreate(t, func() (*projection.Views, error) { return projection.OpenViews(t.Context(), e.js) })
				for range 3 { // past the snapshot's revision
					e.put(t, "r1", 1)
				}
				e.put(t, "r9", 1)
			},
			quarantined: "deleted and created again",
		},
		"the bucket purged": {
			spoil: func(t *testing.T, e *snapEnv) {
				s, err := e.js.Stream(t.Context(), "KV_"+projection.DefaultBucket)
				require.NoError(t, err)
				require.NoError(t, s.Purge(t.Context()))
				e.put(t, "r9", 1)
			},
			quarantined: "purged",
		},
		"the bucket behind the snapshot": {
			spoil: func(t *testing.T, e *snapEnv) {
				require.NoError(t, e.js.DeleteKeyValue(t.Context(), projection.DefaultBucket))
				e.views = natstest.Recreate(t, func() (*projection.Views, error) { return projection.OpenViews(t.Context(), e.js) })
				e.put(t, "r9", 1)
				// As if the bucket had been created at the snapshot's time.
				data, err := e.snaps.Load(t.Context(), projection.DefaultBucket)
				require.NoError(t, err)
				restamp(t, e, data)
			},
			quarantined: "before the snapshot's",
		},
	}
	cases["a revision later than its records"] = struct {
		spoil       func(t *testing.T, e *snapEnv)
		quarantined string
	}{
		spoil: func(t *testing.T, e *snapEnv) {
			v := snapView("r1", 3)
			v.State.Status = aggregate.StatusSucceeded
			e.putView(t, v)
			resnapshot(t, e, func(info *index.SnapshotInfo, _ *index.Index) { info.Revision = e.lastRev(t) })
		},
		quarantined: "at version 3 (SUCCEEDED)",
	}
	cases["a revision later than a deletion"] = struct {
		spoil       func(t *testing.T, e *snapEnv)
		quarantined string
	}{
		spoil: func(t *testing.T, e *snapEnv) {
			e.del(t, "r2")
			resnapshot(t, e, func(info *index.SnapshotInfo, _ *index.Index) { info.Revision = e.lastRev(t) })
		},
		quarantined: `deleted record "r2"`,
	}
	cases["a record edited"] = struct {
		spoil       func(t *testing.T, e *snapEnv)
		quarantined string
	}{
		spoil: func(t *testing.T, e *snapEnv) {
			resnapshot(t, e, func(_ *index.SnapshotInfo, ix *index.Index) {
				v := snapView("r1", 2)
				v.State.Status = aggregate.StatusSucceeded
				ix.Put(v)
			})
		},
		quarantined: "at version 2 (SUCCEEDED)",
	}
	cases["a record added"] = struct {
		spoil       func(t *testing.T, e *snapEnv)
		quarantined string
	}{
		spoil: func(t *testing.T, e *snapEnv) {
			resnapshot(t, e, func(info *index.SnapshotInfo, ix *index.Index) {
				ix.Put(snapView("r7", 1))
				info.Records++
			})
		},
		quarantined: `record "r7", which the views bucket does not hold`,
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newSnapEnv(t)
			for i := 1; i <= 3; i++ {
				e.put(t, fmt.Sprintf("r%d", i), 2)
			}
			first := e.index(t, time.Hour)
			stop := run(t, first)
			<-first.Ready()
			eventuallyHolds(t, first, map[string]uint64{"r1": 2, "r2": 2, "r3": 2})
			stop()
			c.spoil(t, e)

			want := map[string]uint64{}
			keys, err := e.views.ListKeys(t.Context())
			require.NoError(t, err)
			for k := range keys.Keys() {
				entry, err := e.views.Get(t.Context(), k)
				require.NoError(t, err)
				var v api.View
				require.NoError(t, json.Unmarshal(entry.Value(), &v))
				want[v.State.ID] = v.Version
			}
			second := e.index(t, time.Hour)
			run(t, second)
			<-second.Ready()
			assert.False(t, second.Start().FromSnapshot, "a full load")
			assert.Equal(t, want, versions(t, second))
			qe, err := e.quar.All(t.Context(), quarantine.Query{})
			require.NoError(t, err)
			if c.quarantined == "" {
				assert.Empty(t, qe)
				return
			}
			require.Len(t, qe, 1, "the snapshot is quarantined")
			assert.Equal(t, quarantine.KindSnapshot, qe[0].Kind)
			assert.Equal(t, e.snaps.Bucket(), qe[0].Bucket)
			assert.Equal(t, projection.DefaultBucket, qe[0].Key)
			assert.Contains(t, qe[0].Error, c.quarantined)
		})
	}
}

// restamp saves data again as a snapshot of the views bucket as it is now
// (its origin), keeping its revision and records.
func restamp(t *testing.T, e *snapEnv, data []byte) {
	t.Helper()
	require.NoError(t, e.snaps.Save(t.Context(), projection.DefaultBucket, data))
	st, err := e.views.Status(t.Context())
	require.NoError(t, err)
	resnapshot(t, e, func(info *index.SnapshotInfo, _ *index.Index) {
		info.Origin = st.(*jetstream.KeyValueBucketStatus).StreamInfo().Created.UnixNano()
	})
}

// resnapshot saves the stored snapshot again after edit changed what it
// says of itself or its records: a valid snapshot, checksum and all, as
// whoever can write the snapshot bucket can write.
func resnapshot(t *testing.T, e *snapEnv, edit func(info *index.SnapshotInfo, ix *index.Index)) {
	t.Helper()
	resnapshotAs(t, e.snaps, projection.DefaultBucket, edit)
}

// resnapshotAs is resnapshot of snapshot name in snaps.
func resnapshotAs(t *testing.T, snaps *projection.Snapshots, name string, edit func(info *index.SnapshotInfo, ix *index.Index)) {
	t.Helper()
	data, err := snaps.Load(t.Context(), name)
	require.NoError(t, err)
	info, err := index.ReadSnapshotInfo(data)
	require.NoError(t, err)
	ix, err := index.New()
	require.NoError(t, err)
	ix.Update(func(b *index.Batch) {
		b.BeginLoad(false)
		_, err = b.LoadSnapshot(data)
		b.EndLoad(true)
	})
	require.NoError(t, err)
	edit(&info, ix)
	out, err := ix.AppendSnapshot(nil, info)
	require.NoError(t, err)
	require.NoError(t, snaps.Save(t.Context(), name, out))
}

// Given a running index with a period of a minute by its clock, when the
// clock passes a minute after a change, then it saves a snapshot of the
// change's revision; with no change since, it saves none.
func TestIndexSavesASnapshotEveryPeriod(t *testing.T) {
	e := newSnapEnv(t)
	e.put(t, "r1", 1)
	ix := e.index(t, time.Minute)
	run(t, ix)
	<-ix.Ready()
	_, err := e.snaps.Load(t.Context(), projection.DefaultBucket)
	require.ErrorIs(t, err, projection.ErrNoSnapshot, "none before the period")

	rev := e.put(t, "r2", 1)
	eventuallyHolds(t, ix, map[string]uint64{"r1": 1, "r2": 1})
	e.clock.Set(e.clock.Now().Add(time.Minute))
	require.Eventually(t, func() bool {
		_, err := e.snaps.Load(t.Context(), projection.DefaultBucket)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "a snapshot once the clock passed the period")
	info := e.snapshotInfo(t)
	assert.Equal(t, rev, info.Revision)
	assert.Equal(t, 2, info.Records)

	saved, err := ix.SaveSnapshot(t.Context())
	require.NoError(t, err)
	assert.False(t, saved, "nothing changed since the last one")
}

// An index that started from a snapshot and saw no change since has
// nothing to save.
func TestIndexStartedFromASnapshotDoesNotSaveItAgain(t *testing.T) {
	e := newSnapEnv(t)
	e.put(t, "r1", 1)
	first := e.index(t, time.Hour)
	stop := run(t, first)
	<-first.Ready()
	stop()
	second := e.index(t, time.Hour)
	run(t, second)
	<-second.Ready()
	require.True(t, second.Start().FromSnapshot)
	saved, err := second.SaveSnapshot(t.Context())
	require.NoError(t, err)
	assert.False(t, saved, "the snapshot it started from is current")
	e.put(t, "r2", 1)
	eventuallyHolds(t, second, map[string]uint64{"r1": 1, "r2": 1})
	saved, err = second.SaveSnapshot(t.Context())
	require.NoError(t, err)
	assert.True(t, saved, "a change since: saved")
	assert.Equal(t, e.lastRev(t), e.snapshotInfo(t).Revision)
}

func TestWithSnapshotsIsValidated(t *testing.T) {
	e := newSnapEnv(t)
	for name, opt := range map[string]projection.IndexOption{
		"no bucket":   projection.WithSnapshots(nil, time.Minute),
		"zero period": projection.WithSnapshots(e.snaps, 0),
		"too short":   projection.WithSnapshots(e.snaps, time.Millisecond),
		"too long":    projection.WithSnapshots(e.snaps, 25*time.Hour),
	} {
		_, err := projection.NewIndex(e.views, nil, opt)
		assert.ErrorIs(t, err, projection.ErrInvalidOption, name)
	}
	for name, opt := range map[string]projection.SnapshotsOption{
		"no name":    projection.WithSnapshotBucket(""),
		"storage":    projection.WithSnapshotStorage(jetstream.StorageType(7), 1),
		"replicas":   projection.WithSnapshotStorage(jetstream.FileStorage, 0),
		"zero bytes": projection.WithMaxSnapshotBytes(0),
	} {
		_, err := projection.OpenSnapshots(t.Context(), e.js, opt)
		assert.ErrorIs(t, err, projection.ErrInvalidOption, name)
	}
	ix := e.env.index(t)
	_, err := ix.SaveSnapshot(t.Context())
	assert.ErrorIs(t, err, projection.ErrInvalidOption, "an index without snapshots")
}

// A snapshot past the bound is not read: quarantined, full load.
func TestIndexRefusesASnapshotPastItsBound(t *testing.T) {
	e := newSnapEnv(t)
	e.put(t, "r1", 1)
	first := e.index(t, time.Hour)
	stop := run(t, first)
	<-first.Ready()
	stop()
	small, err := projection.OpenSnapshots(t.Context(), e.js, projection.WithMaxSnapshotBytes(10))
	require.NoError(t, err)
	ix := e.env.index(t, projection.WithSnapshots(small, time.Hour), projection.WithIndexQuarantine(e.quar))
	run(t, ix)
	<-ix.Ready()
	assert.False(t, ix.StartStats().FromSnapshot)
	assert.Equal(t, map[string]uint64{"r1": 1}, versions(t, ix))
	qe, err := e.quar.All(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	require.Len(t, qe, 1)
	assert.Contains(t, qe[0].Error, "more than the 10 allowed")
}
