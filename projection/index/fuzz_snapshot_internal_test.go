package index

import (
	"testing"
	"time"

	"github.com/amends-dev/amends/api"
	"github.com/stretchr/testify/require"
)

// FuzzLoadSnapshot: the snapshot reader refuses or accepts any bytes
// without a panic, leaves the index empty when it refuses, and what it
// accepts writes back to a snapshot that reads the same. With resummed,
// the input is a body given a valid checksum, so that the fuzzer gets
// past the checksum to the fields.
func FuzzLoadSnapshot(f *testing.F) {
	now := func() time.Time { return time.UnixMilli(base) }
	ix := memIndex(now(), snapshotViews(6))
	data, err := ix.AppendSnapshot(nil, SnapshotInfo{Revision: 3, Skipped: []SkippedKey{{Key: "k", Revision: 2, Why: "bad"}}})
	require.NoError(f, err)
	f.Add(data, false)
	f.Add(data[:len(data)-4], true)
	f.Add(data[:len(data)/2], true)
	empty, err := memIndex(now(), nil).AppendSnapshot(nil, SnapshotInfo{})
	require.NoError(f, err)
	f.Add(empty, false)
	f.Fuzz(func(t *testing.T, data []byte, resummed bool) {
		if resummed {
			data = resum(append([]byte{}, data...))
		}
		_, _ = ReadSnapshotInfo(data)
		got, info, err := restore(t, now, data)
		if err != nil {
			require.Zero(t, got.Len(), "a refused snapshot leaves the index empty")
			return
		}
		require.Equal(t, info.Records, got.Len())
		again, err := got.AppendSnapshot(nil, info)
		require.NoError(t, err)
		back, info2, err := restore(t, now, again)
		require.NoError(t, err, "what the reader accepts writes back")
		require.Equal(t, info, info2)
		require.Equal(t, got.Len(), back.Len())
		for _, it := range mustList(t, got) {
			require.Equal(t, it.Version, back.Version(it.ID))
		}
	})
}

func mustList(t *testing.T, ix *Index) []api.Item {
	t.Helper()
	p, err := ix.List(api.Query{Limit: api.MaxLimit})
	require.NoError(t, err)
	return p.Items
}
