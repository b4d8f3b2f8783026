package index

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// A snapshot of some of an index's records, restored in an index of its
// own and put into an index that holds others, makes that index answer as
// one built from all of them in that order: the names are the receiving index's, a
// record it holds at a higher version keeps it, samples come along.
func TestASnapshotOfSomeRecordsJoinsAnotherIndex(t *testing.T) {
	at := time.UnixMilli(base + 30*pMinute)
	now := func() time.Time { return at }
	views := snapshotViews(2000)
	odd := func(processor, id string) bool { return processor == "Processor1" || processor == "Processor3" }
	var some, others []api.View
	for _, v := range views {
		if odd(v.State.Function.ProcessorName, v.State.ID) {
			some = append(some, v)
		} else {
			others = append(others, v)
		}
	}
	require.NotEmpty(t, some)
	require.NotEmpty(t, others)
	whole := memIndex(at, views)
	parts, err := whole.AppendSnapshots([]SnapshotInfo{{Revision: 7}, {Revision: 8}}, func(processor, id string) int {
		switch {
		case odd(processor, id):
			return 0
		case processor == "Processor2":
			return 1
		}
		return -1 // of no part
	})
	require.NoError(t, err)
	require.Len(t, parts, 2)
	part, info, err := restore(t, now, parts[0])
	require.NoError(t, err)
	require.Equal(t, SnapshotInfo{Revision: 7, Records: len(some)}, info)
	require.Equal(t, len(some), part.Len())
	two, info, err := restore(t, now, parts[1])
	require.NoError(t, err)
	require.Equal(t, uint64(8), info.Revision)
	require.Positive(t, two.Len())
	n2, err := two.Count(api.Filter{Processor: "Processor2"})
	require.NoError(t, err)
	require.Equal(t, two.Len(), n2, "the records of Processor2 alone")
	all2, err := whole.Count(api.Filter{Processor: "Processor2"})
	require.NoError(t, err)
	require.Equal(t, all2, n2, "every record of Processor2")

	// The receiving index holds the others, and one of the snapshot's
	// records at a higher version, which it keeps.
	newer := some[0]
	newer.Version += 5
	newer.State.Status = aggregate.StatusSucceeded
	dst := memIndex(at, append(append([]api.View(nil), others...), newer))
	var n int
	dst.Update(func(b *Batch) { n, err = b.PutFrom(part) })
	require.NoError(t, err)
	assert.Equal(t, len(some), n)
	assert.Equal(t, newer.Version, dst.Version(newer.State.ID), "the higher version stays")

	// The same records put into one index in the same order.
	all := memIndex(at, append(append([]api.View(nil), others...), newer))
	all.Update(func(b *Batch) {
		for i := range some {
			b.Put(&some[i])
		}
	})
	require.Equal(t, len(views), dst.Len())
	answersAlike(t, all, dst, []api.Filter{{}, {Processor: "Processor3"}, {Fingerprint: "fp-2"}, {View: aggregate.ViewToRetry}})

	dst.Update(func(b *Batch) { _, err = b.PutFrom(dst) })
	assert.ErrorIs(t, err, ErrInvalidOption, "an index into itself")
	loading, err := New()
	require.NoError(t, err)
	loading.Update(func(b *Batch) { b.BeginLoad(false) })
	dst.Update(func(b *Batch) { _, err = b.PutFrom(loading) })
	assert.ErrorIs(t, err, ErrLoading)
}
