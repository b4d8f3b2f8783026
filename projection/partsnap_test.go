package projection_test

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/index"
)

// partsEnv is a test's records over the processors Alpha, Beta and Gamma,
// an index of every record and the snapshots' bucket.
type partsEnv struct {
	*env
	full  *projection.Index
	snaps *projection.Snapshots
	ids   map[string][]string // processor → its records' ids
}

func newPartsEnv(t *testing.T) *partsEnv {
	e := &partsEnv{env: newEnv(t), ids: map[string][]string{}}
	run(t, e.projector(t))
	e.full = e.index(t)
	run(t, e.full)
	var err error
	e.snaps, err = projection.OpenSnapshots(t.Context(), e.js)
	require.NoError(t, err)
	for i := range 9 {
		fn := fnA
		fn.ProcessorName = []string{"Alpha", "Beta", "Gamma"}[i%3]
		id := e.create(t, evt(i), fn, "Timeout", nil)
		e.ids[fn.ProcessorName] = append(e.ids[fn.ProcessorName], id)
		require.NoError(t, e.full.WaitFor(t.Context(), id, 1))
	}
	return e
}

// partitioned returns a running index of partitions src holds, with
// snapshots, and its log: it starts a new partition from its snapshot
// however few keys that spares, unless opts say otherwise.
func (e *partsEnv) partitioned(t *testing.T, src *heldSource, opts ...projection.IndexOption) (*projection.Index, *testlog.Buffer) {
	logs := &testlog.Buffer{}
	ix := e.index(t, append([]projection.IndexOption{projection.WithPartitions(src), projection.WithSnapshots(e.snaps, time.Minute), projection.RestoreKeysEach(0),
		projection.WithIndexLogger(logs.Logger(slog.LevelInfo))}, opts...)...)
	run(t, ix)
	return ix, logs
}

// holdsAsFull waits until ix claims partitions and holds exactly the
// records of processors, each at the version the index of every record
// holds.
func (e *partsEnv) holdsAsFull(t *testing.T, ix *projection.Index, processors ...string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("the records of %v, as the index of every record holds them", processors), func() bool {
		if _, claimed := ix.Partitions(); !claimed {
			return false
		}
		var want []string
		for _, id := range listIDs(t, e.full) {
			v, err := e.full.Get(t.Context(), id)
			if err == nil && slices.Contains(processors, v.State.Function.ProcessorName) {
				want = append(want, id)
				if ix.Version(id) != v.Version {
					return false
				}
			}
		}
		slices.Sort(want)
		return slices.Equal(listIDs(t, ix), want)
	})
}

// A partition that moves to another instance starts there from the
// snapshot its last holder saved, and the changes since: a new record, an
// updated one, and one whose function moved it to another processor.
func TestAMovingPartitionStartsFromItsSnapshot(t *testing.T) {
	e := newPartsEnv(t)
	srcA := newHeldSource([]string{"Alpha", "Beta"})
	a, _ := e.partitioned(t, srcA)
	e.holdsAsFull(t, a, "Alpha", "Beta")
	saved, err := a.SaveSnapshot(t.Context())
	require.NoError(t, err)
	require.True(t, saved)
	saved, err = a.SaveSnapshot(t.Context())
	require.NoError(t, err)
	assert.False(t, saved, "nothing changed since")

	// After the save: a new record of Alpha, one updated, one moved to Gamma.
	fn := fnA
	fn.ProcessorName = "Alpha"
	late := e.create(t, evt(100), fn, "Timeout", nil)
	updated, moved := e.ids["Alpha"][0], e.ids["Alpha"][1]
	r := e.exec(t, updated, aggregate.PrepareCompensation{})
	require.NoError(t, e.full.WaitFor(t.Context(), updated, r.Version))
	fn.ProcessorName = "Gamma"
	r = e.exec(t, moved, aggregate.ChangeFunction(fn))
	require.NoError(t, e.full.WaitFor(t.Context(), moved, r.Version))
	require.NoError(t, e.full.WaitFor(t.Context(), late, 1))

	srcB := newHeldSource([]string{"Gamma"})
	b, logsB := e.partitioned(t, srcB)
	e.holdsAsFull(t, b, "Gamma")
	assert.Len(t, logsB.Lines("without a snapshot it could use", "partitions=1 of=1"), 1, "Gamma had no holder before:\n%s", logsB)

	srcA.set([]string{"Beta"})
	srcB.set([]string{"Alpha", "Gamma"})
	e.holdsAsFull(t, b, "Alpha", "Gamma")
	e.holdsAsFull(t, a, "Beta")
	require.Len(t, logsB.Lines(`msg="index: loaded the snapshot of the partition; reading the changes since"`, "partition=Alpha", "records=3"), 1,
		"Alpha started from A's snapshot:\n%s", logsB)
	assert.Contains(t, listIDs(t, b), late)
	assert.Contains(t, listIDs(t, b), moved)

	// The first load of an index with snapshots starts from them too.
	_, err = a.SaveSnapshot(t.Context())
	require.NoError(t, err)
	c, logsC := e.partitioned(t, newHeldSource([]string{"Beta"}))
	e.holdsAsFull(t, c, "Beta")
	require.Len(t, logsC.Lines("loaded the snapshot of the partition", "partition=Beta"), 1, "%s", logsC)
	start := c.StartStats()
	assert.True(t, start.FromSnapshot)
	assert.Equal(t, len(e.ids["Beta"]), start.SnapshotRecords)
}

// A snapshot of a partition that does not check is not used: the
// partition is read from the views bucket.
func TestAPartitionSnapshotThatDoesNotCheckIsNotUsed(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(t *testing.T, e *partsEnv, name string, alpha, beta []byte)
		why  string
	}{
		{name: "another partition's", why: "the snapshot does not", // the bucket's last keys of Beta are not in it
			bad: func(t *testing.T, e *partsEnv, name string, alpha, _ []byte) {
				require.NoError(t, e.snaps.Save(t.Context(), name, alpha))
			}},
		{name: "cut short", why: "checksum",
			bad: func(t *testing.T, e *partsEnv, name string, _, beta []byte) {
				require.NoError(t, e.snaps.Save(t.Context(), name, beta[:len(beta)-5]))
			}},
		{name: "with a record of another partition", why: "holds records of other partitions",
			bad: func(t *testing.T, e *partsEnv, name string, _, _ []byte) {
				v, err := e.full.Get(t.Context(), e.ids["Alpha"][0])
				require.NoError(t, err)
				resnapshotAs(t, e.snaps, name, func(_ *index.SnapshotInfo, ix *index.Index) {
					ix.Update(func(b *index.Batch) { b.Put(&v) })
				})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPartsEnv(t)
			a, _ := e.partitioned(t, newHeldSource([]string{"Alpha", "Beta"}))
			e.holdsAsFull(t, a, "Alpha", "Beta")
			_, err := a.SaveSnapshot(t.Context())
			require.NoError(t, err)
			load := func(p string) []byte {
				name := projection.PartitionSnapshotName(projection.DefaultBucket, p)
				data, err := e.snaps.Load(t.Context(), name)
				require.NoError(t, err)
				sizes, err := e.snaps.Sizes(t.Context(), projection.PartitionSnapshotName(projection.DefaultBucket, ""))
				require.NoError(t, err)
				require.Equal(t, uint64(len(data)), sizes[name])
				require.Len(t, sizes, 2, "Alpha's and Beta's: Gamma has no holder")
				return data
			}
			tc.bad(t, e, projection.PartitionSnapshotName(projection.DefaultBucket, "Beta"), load("Alpha"), load("Beta"))

			b, logs := e.partitioned(t, newHeldSource([]string{"Beta"}))
			e.holdsAsFull(t, b, "Beta")
			lines := logs.Lines("the snapshot cannot be used", "Beta")
			require.Len(t, lines, 1, "%s", logs)
			assert.Contains(t, lines[0], tc.why)
			assert.False(t, b.StartStats().FromSnapshot)
		})
	}
}

// An index of a partition with a record the views bucket holds at a
// later version than the snapshot of its revision says is not started
// from that snapshot.
func TestAPartitionSnapshotLaterThanItsRecordsIsNotUsed(t *testing.T) {
	e := newPartsEnv(t)
	a, _ := e.partitioned(t, newHeldSource([]string{"Alpha"}))
	e.holdsAsFull(t, a, "Alpha")
	_, err := a.SaveSnapshot(t.Context())
	require.NoError(t, err)
	// A change of Alpha after the save, and the snapshot saved again under
	// a revision past that change: it says it holds the change and does not.
	id := e.ids["Alpha"][0]
	r := e.exec(t, id, aggregate.PrepareCompensation{})
	require.NoError(t, e.full.WaitFor(t.Context(), id, r.Version))
	rev := lastRevision(t, e.views)
	resnapshotAs(t, e.snaps, projection.PartitionSnapshotName(projection.DefaultBucket, "Alpha"), func(info *index.SnapshotInfo, _ *index.Index) {
		info.Revision = rev
	})

	b, logs := e.partitioned(t, newHeldSource([]string{"Alpha"}))
	e.holdsAsFull(t, b, "Alpha")
	require.Len(t, logs.Lines("the snapshot cannot be used", "Alpha"), 1, "%s", logs)
	assert.Equal(t, r.Version, b.Version(id))
}

// A restore costs requests: the new partitions of a small bucket are read
// from it when their snapshots spare fewer keys than 3 000 each; in a
// bucket past the filtered-load size, a new partition without a snapshot
// is read alone and the others start from theirs. Either way the index
// holds its partitions' records.
func TestSnapshotsThatSpareFewKeysAreNotRestored(t *testing.T) {
	e := newPartsEnv(t)
	a, _ := e.partitioned(t, newHeldSource([]string{"Alpha", "Beta"}))
	e.holdsAsFull(t, a, "Alpha", "Beta")
	_, err := a.SaveSnapshot(t.Context())
	require.NoError(t, err)

	b, logs := e.partitioned(t, newHeldSource([]string{"Alpha"}), projection.RestoreKeysEach(3000))
	e.holdsAsFull(t, b, "Alpha")
	assert.Len(t, logs.Lines("snapshots would spare fewer keys", "partitions=1", "snapshots=1"), 1, "%s", logs)
	assert.Empty(t, logs.Lines("loaded the snapshot of the partition"), "%s", logs)

	// Past the filtered-load size (here every bucket), Alpha starts from
	// its snapshot and Gamma, which has none, is read alone.
	c, logs := e.partitioned(t, newHeldSource([]string{"Alpha", "Gamma"}), projection.LoadFilteredAbove(0))
	e.holdsAsFull(t, c, "Alpha", "Gamma")
	assert.Len(t, logs.Lines("loaded the snapshot of the partition", "partition=Alpha"), 1, "%s", logs)
	assert.Len(t, logs.Lines("without a snapshot it could use", "partitions=1 of=2"), 1, "%s", logs)
	// The watch then reads from Alpha's snapshot on: none of Alpha's
	// records again.
	assert.Len(t, logs.Lines("loaded the partitions this instance now holds", "skipped=0 "), 1, "%s", logs)
}
