package index

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// The index calls the predicates on predicateState, which keeps only some
// fields: they must answer as on the full state, at every time.
func TestPredicateStateAnswersLikeTheFullState(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	in := newInterner()
	for i := range 20_000 {
		v := randomView(r, i)
		e := entryOf(&v, in)
		full, mini := v.State, e.predicateState()
		now := randomTime(r, &v)
		require.Equal(t, full.IsBelowRetryThreshold(), mini.IsBelowRetryThreshold(), "IsBelowRetryThreshold %+v", full)
		require.Equal(t, full.IsRetryable(), mini.IsRetryable(), "IsRetryable %+v", full)
		require.Equal(t, full.Timeout(now), mini.Timeout(now), "Timeout %+v at %d", full, now.UnixMilli())
		require.Equal(t, full.CanForceRetry(now), mini.CanForceRetry(now), "CanForceRetry")
		require.Equal(t, full.CanRetry(now), mini.CanRetry(now), "CanRetry")
		require.Equal(t, full.CanNextRetry(now), mini.CanNextRetry(now), "CanNextRetry")
		require.Equal(t, full.Schedulable(now), mini.Schedulable(now), "Schedulable")
		for _, view := range aggregate.Views {
			require.Equal(t, view.Contains(&full, now), view.Contains(&mini, now), "view %s", view)
		}
		// What List returns round-trips.
		it := e.item(in)
		require.Equal(t, full.Function, it.Function)
		require.Equal(t, full.EventID.AggregateID, it.Aggregate)
		require.Equal(t, full.Status, it.Status)
		require.Equal(t, full.Recoverable, it.Recoverable)
		require.Equal(t, full.Error.ErrorCode, it.ErrorCode)
	}
}

// Due must be exactly the records Schedulable at now, oldest nextRetryAt
// first, cut at limit: compared with a scan of every record, after random
// updates and removals.
func TestDueIsTheSchedulableRecordsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	views := randomViews(r, 4000)
	ix := memIndex(time.UnixMilli(base), views)
	// Move some records on and drop others, as the watch would.
	ix.mu.Lock()
	for i := range 1000 {
		k := r.IntN(len(views))
		if i%4 == 0 {
			ix.remove(views[k].State.ID)
			views[k] = api.View{}
			continue
		}
		next := randomView(r, k)
		next.Version = views[k].Version + 1
		views[k] = next
		ix.put(&views[k])
	}
	ix.mu.Unlock()
	for range 300 {
		now := randomTime(r, &views[r.IntN(len(views))])
		limit := 1 + r.IntN(200)
		var want []string
		sorted := slices.Clone(views)
		slices.SortFunc(sorted, func(a, b api.View) int {
			return cmp.Or(cmp.Compare(a.State.RetryState.NextRetryAt, b.State.RetryState.NextRetryAt), cmp.Compare(idTie(a.State.ID), idTie(b.State.ID)))
		})
		for _, v := range sorted {
			if v.State.ID != "" && v.State.Schedulable(now) && len(want) < limit {
				want = append(want, v.State.ID)
			}
		}
		var got []string
		for _, d := range ix.Due(now, limit) {
			got = append(got, d.ID)
		}
		require.Equal(t, want, got, "Due(%d, %d)", now.UnixMilli(), limit)
	}
}

// Ids are packed and unpacked to what they were, UUIDs to 16 bytes, and
// their tie is the id's.
func TestPackedIDs(t *testing.T) {
	for _, id := range []string{
		"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "00000000-0000-0000-0000-000000000000", "007f08f7-90af-587f-b415-759a797ed8d6",
		"6BA7B810-9DAD-11D1-80B4-00C04FD430C8", // not canonical: kept
		"6ba7b810-9dad-11d1-80b4-00c04fd430cg", "6ba7b810x9dad-11d1-80b4-00c04fd430c8",
		"r1", "0123456789abcdef", "\x00x", "\x00", "\x0023456789abcde", "\x00123456789abcdef", "order-1", "",
	} {
		p := packID(id)
		require.Equal(t, id, unpackID(p), "%q", id)
		require.Equal(t, idTie(id), tieOf(p), "%q", id)
		canonical := id == "6ba7b810-9dad-11d1-80b4-00c04fd430c8" // a UUID whose first byte is 0 is kept whole
		require.Equal(t, canonical, len(p) == 16, "%q packs to %q", id, p)
	}
	require.NotEqual(t, packID("0123456789abcdef"), packID("30313233-3435-3637-3839-616263646566"),
		"a 16-byte id is not taken for a UUID")
}

// Packing is one to one: every id unpacks to itself, whatever its bytes.
func TestPackIDIsOneToOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.OneOf(rapid.StringN(0, 40, -1), rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`),
			rapid.Map(rapid.SliceOfN(rapid.Byte(), 14, 17), func(b []byte) string { return string(b) }))
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		require.Equal(t, a, unpackID(packID(a)))
		require.Equal(t, a == b, packID(a) == packID(b), "%q %q", a, b)
		require.Equal(t, idTie(a), tieOf(packID(a)))
	})
}

// The entry of a record's bytes (Batch.PutFields) is the entry of its
// strings (Batch.Put).
func TestEntryOfBytesIsTheEntryOfStrings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := pick(t, "id", "r1", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "0123456789abcdef", "\x00x")
		v := drawView(t, id, uint64(rapid.IntRange(1, 1000).Draw(t, "version")))
		f := fieldsOf(&v)
		b := Fields[[]byte]{ID: []byte(f.ID), EventID: []byte(f.EventID), AggregateID: []byte(f.AggregateID),
			AggregateContext: []byte(f.AggregateContext), AggregateType: []byte(f.AggregateType), FunctionKind: []byte(f.FunctionKind),
			FunctionContext: []byte(f.FunctionContext), Processor: []byte(f.Processor), Function: []byte(f.Function),
			ErrorCode: []byte(f.ErrorCode), ErrorMsg: []byte(f.ErrorMsg), Fingerprint: []byte(f.Fingerprint),
			Status: []byte(f.Status), Recoverable: []byte(f.Recoverable), Version: f.Version, ExecuteAt: f.ExecuteAt,
			TimeoutAt: f.TimeoutAt, NextRetryAt: f.NextRetryAt, Retries: f.Retries, MaxRetries: f.MaxRetries}
		in := newInterner()
		require.Equal(t, newEntry(&f, in), newEntry(&b, in))
	})
}

// Packing the bytes of a UUID allocates only the 16 bytes it keeps.
func TestPackIDBytesAllocatesOnlyItsResult(t *testing.T) {
	b := []byte("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	var p string
	allocs := testing.AllocsPerRun(100, func() { p = packID(b) })
	require.Equal(t, 1.0, allocs)
	require.Equal(t, string(b), unpackID(p))
}
