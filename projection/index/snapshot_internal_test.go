package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// restore returns a new index loaded from snapshot data, as a source
// starting from it does (a replacing load: what comes after wins).
func restore(tb testing.TB, now func() time.Time, data []byte) (*Index, SnapshotInfo, error) {
	tb.Helper()
	ix, err := New(WithClock(aggregate.ClockFunc(now)))
	require.NoError(tb, err)
	var info SnapshotInfo
	ix.Update(func(b *Batch) {
		b.BeginLoad(true)
		info, err = b.LoadSnapshot(data)
		b.EndLoad(err == nil)
	})
	return ix, info, err
}

// snapshotViews is a mix of records: UUID ids and others (one that could
// pass for packed, one of 16 bytes), fingerprints with samples.
func snapshotViews(n int) []api.View {
	r := rand.New(rand.NewPCG(7, 7))
	views := make([]api.View, n)
	for i := range views {
		views[i] = randomView(r, i)
		views[i].State.Error.Fingerprint = fmt.Sprintf("fp-%d", i%7)
		views[i].State.Error.ErrorMsg = fmt.Sprintf("message of %d", i%7)
	}
	views[0].State.ID = "\x00nul-first"
	views[1].State.ID = "sixteen-bytes-id"
	views[2].State.ID = "plain"
	views[3].State.EventID.ID = ""
	return views
}

func TestSnapshotRoundTrip(t *testing.T) {
	at := time.UnixMilli(base + 30*pMinute)
	now := func() time.Time { return at }
	views := snapshotViews(3000)
	ix := memIndex(at, views)
	ix.Remove(views[10].State.ID) // a freed slot is no record
	info := SnapshotInfo{Revision: 4242, Origin: -17, Taken: base,
		Skipped: []SkippedKey{{Key: "k1", Revision: 9, Why: "not a view"}}}
	data, err := ix.AppendSnapshot(nil, info)
	require.NoError(t, err)
	assert.Less(t, len(data), 100*len(views), "about 80 bytes a record")

	got, gotInfo, err := restore(t, now, data)
	require.NoError(t, err)
	info.Records = len(views) - 1
	assert.Equal(t, info, gotInfo)
	head, err := ReadSnapshotInfo(data)
	require.NoError(t, err)
	assert.Equal(t, info, head, "ReadSnapshotInfo reads the same header")

	require.Equal(t, ix.Len(), got.Len())
	for _, v := range views[11:] {
		assert.Equal(t, v.Version, got.Version(v.State.ID), "record %q", v.State.ID)
	}
	assert.Zero(t, got.Version(views[10].State.ID), "the removed record stays removed")
	answersAlike(t, ix, got, []api.Filter{{}, {View: aggregate.ViewToRetry}, {Processor: "Processor3"}, {Fingerprint: "fp-2"}})
	assert.Equal(t, ix.Due(at, 100), got.Due(at, 100))

	again, err := got.AppendSnapshot(nil, info)
	require.NoError(t, err)
	assert.Equal(t, len(data), len(again), "a restored index writes a snapshot of the same size")
}

// answersAlike checks that have answers Summary, FingerprintSummary
// (samples included) and a List page sorted by next retry as want does,
// for each of filters.
func answersAlike(t *testing.T, want, have *Index, filters []api.Filter) {
	t.Helper()
	for _, f := range filters {
		wantSum, err := want.Summary(f)
		require.NoError(t, err)
		haveSum, err := have.Summary(f)
		require.NoError(t, err)
		assert.Equal(t, wantSum, haveSum, "Summary(%+v)", f)
		wantFP, err := want.FingerprintSummary(f)
		require.NoError(t, err)
		haveFP, err := have.FingerprintSummary(f)
		require.NoError(t, err)
		assert.Equal(t, wantFP, haveFP, "FingerprintSummary(%+v), samples included", f)
		q := api.Query{Filter: f, Limit: api.MaxLimit, Sort: api.Sort{Field: api.SortNextRetryAt}}
		wantPage, err := want.List(q)
		require.NoError(t, err)
		havePage, err := have.List(q)
		require.NoError(t, err)
		assert.Equal(t, wantPage, havePage, "List(%+v)", f)
	}
}

// resum puts a valid checksum on a body (everything but the last 4 bytes).
func resum(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, crcTable))
}

func TestSnapshotRefusesWhatItDidNotWrite(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(base) }
	ix := memIndex(now(), snapshotViews(20))
	data, err := ix.AppendSnapshot(nil, SnapshotInfo{Revision: 5})
	require.NoError(t, err)
	body := data[:len(data)-4]
	header := len(snapshotMagic)

	cases := map[string]struct {
		data   []byte
		want   error
		header bool // ReadSnapshotInfo sees it too
	}{
		"empty":        {nil, ErrInvalidSnapshot, true},
		"no magic":     {resum(append([]byte("not-an-index\x00"), body[header:]...)), ErrInvalidSnapshot, true},
		"a bit off":    {flip(data, len(data)/2), ErrInvalidSnapshot, true},
		"truncated":    {data[:len(data)-9], ErrInvalidSnapshot, true},
		"cut and sums": {resum(append([]byte{}, body[:len(body)-5]...)), ErrInvalidSnapshot, false},
		"version 2":    {resum(append(append([]byte(snapshotMagic), 2), body[header+1:]...)), ErrSnapshotVersion, true},
		"bytes after":  {resum(append(append([]byte{}, body...), 0)), ErrInvalidSnapshot, false},
		"huge count":   {resum(append(binary.AppendUvarint([]byte(snapshotMagic+"\x01\x05\x00\x00"), 1<<40), 0)), ErrInvalidSnapshot, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadSnapshotInfo(c.data); c.header {
				require.ErrorIs(t, err, c.want, "ReadSnapshotInfo")
			}
			got, _, err := restore(t, now, c.data)
			require.ErrorIs(t, err, c.want)
			assert.Zero(t, got.Len(), "a snapshot that does not read leaves the index empty")
			n, err := got.Count(api.Filter{})
			require.NoError(t, err)
			assert.Zero(t, n)
		})
	}
}

func flip(data []byte, i int) []byte {
	out := append([]byte{}, data...)
	out[i] ^= 0x40
	return out
}

// A snapshot whose checksum holds but whose numbers do not (written by
// something else): refused field by field, the index left empty.
func TestSnapshotRefusesBadNumbers(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(base) }
	one := memIndex(now(), snapshotViews(4)[2:3]) // the record "plain"
	data, err := one.AppendSnapshot(nil, SnapshotInfo{})
	require.NoError(t, err)
	body := data[:len(data)-4]
	// The entry is the body's tail: ..., seven name numbers, three enums.
	at := func(fromEnd int, b byte) []byte {
		out := append([]byte{}, body...)
		out[len(out)-fromEnd] = b
		return resum(out)
	}
	for name, bad := range map[string][]byte{
		"recoverable past its values": at(1, byte(len(aggregate.Recoverabilities)+1)),
		"status past its values":      at(2, 200),
		"fingerprint past the names":  at(4, 100),
	} {
		t.Run(name, func(t *testing.T) {
			got, _, err := restore(t, now, bad)
			require.ErrorIs(t, err, ErrInvalidSnapshot)
			assert.Zero(t, got.Len())
		})
	}
}

// A snapshot that holds one record twice, its checksum sound: refused,
// as the ids a snapshot restores are not looked up one by one.
func TestSnapshotRefusesARecordTwice(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(base) }
	one := memIndex(now(), snapshotViews(4)[2:3]) // the record "plain"
	e := one.slots.at(0)
	body := append([]byte(snapshotMagic), SnapshotVersion)
	body = appendInfo(body, &SnapshotInfo{Records: 2})
	body = binary.AppendUvarint(body, uint64(len(one.names.names)-1))
	for _, n := range one.names.names[1:] {
		body = appendString(body, n)
	}
	body = binary.AppendUvarint(body, 0) // no samples
	body = binary.AppendUvarint(body, 2)
	body = appendEntry(appendEntry(body, e), e)
	got, _, err := restore(t, now, resum(body))
	require.ErrorIs(t, err, ErrInvalidSnapshot)
	assert.ErrorContains(t, err, "twice")
	assert.Zero(t, got.Len(), "left empty")

	// The same layout with the record once restores: the test's snapshot
	// is sound but for the duplicate.
	body = append([]byte(snapshotMagic), SnapshotVersion)
	body = appendInfo(body, &SnapshotInfo{Records: 1})
	body = binary.AppendUvarint(body, uint64(len(one.names.names)-1))
	for _, n := range one.names.names[1:] {
		body = appendString(body, n)
	}
	body = binary.AppendUvarint(body, 0)
	body = binary.AppendUvarint(body, 1)
	got, _, err = restore(t, now, resum(appendEntry(body, e)))
	require.NoError(t, err)
	assert.Equal(t, 1, got.Len())
}

func TestSnapshotNeedsAnEmptyLoad(t *testing.T) {
	ix := memIndex(time.UnixMilli(base), snapshotViews(4))
	data, err := ix.AppendSnapshot(nil, SnapshotInfo{})
	require.NoError(t, err)
	ix.Update(func(b *Batch) {
		_, err = b.LoadSnapshot(data)
	})
	require.ErrorIs(t, err, ErrNotEmpty, "outside a load")
	ix.Update(func(b *Batch) {
		b.BeginLoad(true)
		_, err = b.LoadSnapshot(data)
		b.EndLoad(false)
	})
	require.ErrorIs(t, err, ErrNotEmpty, "a load into a non-empty index")

	loading := memIndex(time.UnixMilli(base), nil)
	loading.Update(func(b *Batch) { b.BeginLoad(false) })
	_, err = loading.AppendSnapshot(nil, SnapshotInfo{})
	require.ErrorIs(t, err, ErrLoading)
}

// The property test of a restart from a snapshot: after any mix of
// upserts, removals (as retention removes records), older views and a
// restart from a snapshot taken at any point, with the changes after it
// applied as a source replays them (a replacing load in which every
// later view wins), Count, Summary and List answer as a scan of the
// records.
func TestSnapshotRestartAnswersAsAScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var now atomicTime
		ix := memIndex(time.Time{}, nil)
		ix.clock = aggregate.ClockFunc(now.get)
		model := map[string]api.View{}
		version := uint64(1)
		ids := []string{"r0", "r1", "r2", "r3", "r4", "r5", "sixteen-bytes-id",
			"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "007f08f7-90af-587f-b415-759a797ed8d6"}
		// The changes since the snapshot, which the restart replays.
		type change struct {
			id string
			v  *api.View
		}
		var since []change
		var snap []byte
		snapAt := rapid.IntRange(0, 50).Draw(t, "snapshot at")
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			if step == snapAt {
				var err error
				snap, err = ix.AppendSnapshot(nil, SnapshotInfo{Revision: uint64(step)})
				require.NoError(t, err)
				since = nil
			}
			id := pick(t, "record", ids...)
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2:
				ix.Remove(id)
				delete(model, id)
				since = append(since, change{id: id})
			case 3:
				// A record removed and opened again starts over at a lower
				// version: the source's order wins, not the version.
				v := drawView(t, id, 1)
				ix.Remove(id)
				ix.Put(v)
				model[id] = v
				since = append(since, change{id: id}, change{id: id, v: &v})
			default:
				version++
				v := drawView(t, id, version)
				ix.Put(v)
				model[id] = v
				since = append(since, change{id: id, v: &v})
			}
			if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("check %d", step)) == 0 {
				requireAnswersAsScan(t, ix, model, &now)
			}
		}
		if snap == nil {
			return
		}
		// The restart: the snapshot, then the changes since in one
		// replacing load, as a bucket of one revision per key replays
		// them from the snapshot's revision on: the last change of each
		// key, in their order (a removal followed by a put is gone).
		last := map[string]int{}
		for i, c := range since {
			last[c.id] = i
		}
		var replay []change
		for i, c := range since {
			if last[c.id] == i {
				replay = append(replay, c)
			}
		}
		var err error
		ix, err = New(WithClock(aggregate.ClockFunc(now.get)))
		require.NoError(t, err)
		ix.Update(func(b *Batch) {
			b.BeginLoad(true)
			_, err = b.LoadSnapshot(snap)
			for _, c := range replay {
				if c.v == nil {
					b.Remove(c.id)
				} else {
					b.Put(c.v)
				}
			}
			b.EndLoad(true)
		})
		require.NoError(t, err)
		require.Equal(t, len(model), ix.Len())
		for range 3 {
			requireAnswersAsScan(t, ix, model, &now)
		}
		// Live changes after the restart.
		for i := range rapid.IntRange(0, 10).Draw(t, "after") {
			id := pick(t, "record after", ids...)
			if rapid.Bool().Draw(t, fmt.Sprintf("remove %d", i)) {
				ix.Remove(id)
				delete(model, id)
				continue
			}
			version++
			v := drawView(t, id, version)
			ix.Put(v)
			model[id] = v
		}
		requireAnswersAsScan(t, ix, model, &now)
	})
}
