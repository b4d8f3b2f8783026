package projection

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
)

// The index calls the predicates on predicateState, which keeps only some
// fields: they must answer as on the full state, at every time.
func TestPredicateStateAnswersLikeTheFullState(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	in := newInterner()
	for i := range 20_000 {
		v := randomView(r, i)
		e := newEntry(&v, in)
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
	views := make([]View, 4000)
	for i := range views {
		views[i] = randomView(r, i)
	}
	ix := memIndex(time.UnixMilli(base), views)
	// Move some records on and drop others, as the watch would.
	ix.mu.Lock()
	for i := range 1000 {
		k := r.IntN(len(views))
		if i%4 == 0 {
			ix.remove(views[k].State.ID)
			views[k] = View{}
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
		slices.SortFunc(sorted, func(a, b View) int {
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
