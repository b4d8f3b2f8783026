package archive_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

var (
	now = time.UnixMilli(1_735_000_000_000)
	fnA = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "send"}
	fnB = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Billing", Name: "charge"}
)

// history returns a record of n streams at sequences from seq on.
func history(id string, f aggregate.FunctionInfo, n int, seq uint64) archive.Record {
	r := archive.Record{ID: id, Function: f}
	for v := 1; v <= n; v++ {
		body, _ := json.Marshal(map[string]int{"v": v})
		r.Streams = append(r.Streams, eventstore.Stream{ID: uuid.NewString(), Aggregate: aggregate.RecordAggregate(id), Version: uint64(v),
			CommandID: uuid.NewString(), CreateTime: now.UnixMilli() + int64(v), Seq: seq + uint64(v),
			Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: body}}})
	}
	return r
}

func sinks(t *testing.T) map[string]archive.Sink {
	dir, err := archive.Open(t.Context(), nil, "dir:"+t.TempDir(), 0)
	require.NoError(t, err)
	obs, err := archive.Open(t.Context(), natstest.New(t).JetStream(), "objectstore:ARCHIVE", 1)
	require.NoError(t, err)
	return map[string]archive.Sink{"dir": dir, "objectstore": obs}
}

func TestWriteSweepThenReadItBack(t *testing.T) {
	for name, sink := range sinks(t) {
		t.Run(name, func(t *testing.T) {
			// Given three records of two functions
			recs := []archive.Record{history(uuid.NewString(), fnA, 3, 10), history(uuid.NewString(), fnB, 1, 20), history(uuid.NewString(), fnA, 2, 30)}

			// When sweep 7 archives them
			m, err := archive.WriteSweep(t.Context(), sink, 7, now, recs)
			require.NoError(t, err)

			// Then there is one object per function and a manifest naming them
			require.Len(t, m.Objects, 2)
			back, err := archive.ReadManifest(t.Context(), sink, 7)
			require.NoError(t, err)
			assert.Equal(t, m, back)
			sweeps, err := archive.Sweeps(t.Context(), sink)
			require.NoError(t, err)
			assert.Equal(t, []uint64{7}, sweeps)
			got := map[string]archive.Record{}
			for _, o := range m.Objects {
				require.NoError(t, archive.ReadObject(t.Context(), sink, o, func(r archive.Record) error {
					assert.Equal(t, o.Function, r.Function)
					got[r.ID] = r
					return nil
				}))
			}
			for _, r := range recs {
				assert.Equal(t, r.Streams, got[r.ID].Streams, "record %s reads back as written", r.ID)
			}

			// And writing the same batch again (a retry after a crash) gives the same manifest
			again, err := archive.WriteSweep(t.Context(), sink, 7, now, recs)
			require.NoError(t, err)
			assert.Equal(t, m, again)
		})
	}
}

func TestWriteSweepRefusesPartialHistories(t *testing.T) {
	sink, err := archive.OpenDir(t.TempDir())
	require.NoError(t, err)
	r := history(uuid.NewString(), fnA, 3, 10)
	r.Streams = r.Streams[1:]
	_, err = archive.WriteSweep(t.Context(), sink, 1, now, []archive.Record{r})
	require.ErrorIs(t, err, archive.ErrInvalid)
	assert.Contains(t, err.Error(), "a whole history from version 1")
	_, err = archive.WriteSweep(t.Context(), sink, 1, now, nil)
	require.ErrorIs(t, err, archive.ErrInvalid)
}

func TestReadingADamagedArchiveIsAnErrorNotAPanic(t *testing.T) {
	dir := t.TempDir()
	sink, err := archive.OpenDir(dir)
	require.NoError(t, err)
	m, err := archive.WriteSweep(t.Context(), sink, 1, now, []archive.Record{history(uuid.NewString(), fnA, 4, 1)})
	require.NoError(t, err)
	obj := filepath.Join(dir, m.Objects[0].Name)
	good, err := os.ReadFile(obj)
	require.NoError(t, err)
	read := func() error {
		return archive.ReadObject(t.Context(), sink, m.Objects[0], func(archive.Record) error { return nil })
	}
	for name, data := range map[string][]byte{
		"a flipped byte": append(append([]byte{}, good[:len(good)/2]...), append([]byte{good[len(good)/2] ^ 0xff}, good[len(good)/2+1:]...)...),
		"cut short":      good[:len(good)-9],
		"empty":          {},
	} {
		require.NoError(t, os.WriteFile(obj, data, 0o600))
		err := read()
		require.ErrorIs(t, err, archive.ErrInvalid, name)
		assert.Contains(t, err.Error(), "is not what its manifest lists", name)
	}
	require.NoError(t, os.WriteFile(obj, good, 0o600))
	require.NoError(t, read())

	manifest := filepath.Join(dir, archive.ManifestName(1))
	orig, err := os.ReadFile(manifest)
	require.NoError(t, err)
	for field, edit := range map[string]func(*archive.Manifest){
		"format":     func(m *archive.Manifest) { m.Format = "other/9" },
		"sweep":      func(m *archive.Manifest) { m.Sweep = 2 },
		"objects[0]": func(m *archive.Manifest) { m.Objects[0].Bytes = -1 },
		"objects[0].name": func(m *archive.Manifest) {
			m.Objects[0].Name = "sweep-000000000001-0000000000000000.ndjson.gz"
		},
		"objects[0].sha256": func(m *archive.Manifest) { m.Objects[0].SHA256 = "xyz" },
	} {
		var mm archive.Manifest
		require.NoError(t, json.Unmarshal(orig, &mm))
		edit(&mm)
		data, _ := json.Marshal(mm)
		require.NoError(t, os.WriteFile(manifest, data, 0o600))
		_, err := archive.ReadManifest(t.Context(), sink, 1)
		require.ErrorIs(t, err, archive.ErrInvalid, field)
		assert.Contains(t, err.Error(), "field "+field, "the error names the field")
	}
	require.NoError(t, os.WriteFile(manifest, []byte("{"), 0o600))
	_, err = archive.ReadManifest(t.Context(), sink, 1)
	require.ErrorIs(t, err, archive.ErrInvalid)
	_, err = archive.ReadManifest(t.Context(), sink, 9)
	require.ErrorIs(t, err, archive.ErrNotFound)
}

func TestOpenValidatesTheSpec(t *testing.T) {
	for _, spec := range []string{"", "dir:", "s3:bucket", "objectstore:bad bucket", "objectstore:" + string(make([]byte, 70)), "dir:/tmp/x\x00y"} {
		_, err := archive.Open(t.Context(), nil, spec, 0)
		require.ErrorIs(t, err, archive.ErrInvalid, "spec %q", spec)
	}
	_, err := archive.Open(t.Context(), nil, "objectstore:B", 0)
	require.ErrorIs(t, err, archive.ErrInvalid, "an object store needs a connection")
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, nil, 0o600))
	_, err = archive.Open(t.Context(), nil, "dir:"+f, 0)
	require.Error(t, err, "a file is not a directory")
	sink, err := archive.OpenDir(t.TempDir())
	require.NoError(t, err)
	require.ErrorIs(t, sink.Put(t.Context(), "../escape", nil), archive.ErrInvalid, "only the package's names are written")
}

func TestRestoreOutcomes(t *testing.T) {
	js := natstest.New(t).JetStream()
	store, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context))
	require.NoError(t, err)
	ctx := context.Background()
	add := func(r archive.Record, n int) {
		for _, st := range r.Streams[:n] {
			st.Seq = 0
			_, err := store.Append(ctx, st, st.Version-1)
			require.NoError(t, err)
		}
	}
	fresh, partial, present, diverged := history(uuid.NewString(), fnA, 3, 0), history(uuid.NewString(), fnA, 3, 0), history(uuid.NewString(), fnA, 2, 0), history(uuid.NewString(), fnA, 2, 0)
	add(partial, 1)
	add(present, 2)
	add(history(diverged.ID, fnA, 1, 0), 1)
	for _, c := range []struct {
		r    archive.Record
		want archive.RestoreResult
	}{
		{fresh, archive.RestoreResult{ID: fresh.ID, Outcome: archive.Restored, Appended: 3}},
		{partial, archive.RestoreResult{ID: partial.ID, Outcome: archive.Completed, Appended: 2}},
		{present, archive.RestoreResult{ID: present.ID, Outcome: archive.Present}},
		{diverged, archive.RestoreResult{ID: diverged.ID, Outcome: archive.Diverged}},
	} {
		res, err := archive.Restore(ctx, store, c.r, false)
		require.NoError(t, err)
		assert.Equal(t, c.want, res)
	}
	got, err := store.Load(ctx, aggregate.RecordAggregate(partial.ID), 1)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i := range got {
		assert.Equal(t, partial.Streams[i].ID, got[i].ID, "the restored history keeps its stream ids")
	}
}
