package index

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/partition"
)

// partitioned splits views among k instances as package partition places
// them (by processor, the large ones split by slot) and returns one index
// per instance.
func partitioned(t *testing.T, now time.Time, views []api.View, k int) []*Index {
	t.Helper()
	sizes := map[string]uint64{}
	for i := range views {
		sizes[views[i].State.Function.ProcessorName]++
	}
	instances := make([]string, k)
	for i := range instances {
		instances[i] = fmt.Sprint("i", i)
	}
	plan, err := partition.Compute(sizes, instances, partition.Plan{})
	require.NoError(t, err)
	parts := map[string][]api.View{}
	for _, v := range views {
		owner := plan.Owners[plan.Of(v.State.Function.ProcessorName, v.State.ID)]
		parts[owner] = append(parts[owner], v)
	}
	out := make([]*Index, 0, k)
	for _, in := range instances {
		out = append(out, memIndex(now, parts[in]))
	}
	return out
}

// The merged answers of partitioned indexes are those of one index holding
// every record, for random filters, sorts, page sizes and instance counts:
// every page of a listing, cursors included, the counts and the summaries
// (a fingerprint's sample message aside: any of its failures').
func TestMergedAnswersAreThoseOfOneIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	views := randomViews(r, 1200)
	for i := range views {
		s := &views[i].State // one fingerprint has one function and code
		s.Error.Fingerprint = "fp-" + s.Function.ContextName + s.Function.ProcessorName + s.Function.Name + s.Error.ErrorCode
	}
	now := time.UnixMilli(base + 1_800_000)
	whole := memIndex(now, views)
	for k := 1; k <= 5; k++ {
		parts := partitioned(t, now, views, k)
		for range 40 {
			f := randomFilter(r, &views[r.IntN(len(views))], now)
			q := api.Query{Filter: f, Sort: api.Sort{Field: api.SortFields[r.IntN(len(api.SortFields))], Desc: r.IntN(2) == 0}, Limit: 1 + r.IntN(60)}
			for pages := 0; ; pages++ {
				require.Less(t, pages, len(views)+2, "paging ends")
				want, err := whole.List(q)
				require.NoError(t, err)
				answers := make([]api.Page, len(parts))
				for i, ix := range parts {
					answers[i], err = ix.List(q)
					require.NoError(t, err)
				}
				got, err := MergeList(q, answers)
				require.NoError(t, err)
				require.Equal(t, want, got, "%d instances, page %d of %+v", k, pages, q)
				if got.Next == "" {
					break
				}
				q.Cursor = got.Next
			}

			wantN, err := whole.Count(f)
			require.NoError(t, err)
			gotN := 0
			for _, ix := range parts {
				n, err := ix.Count(f)
				require.NoError(t, err)
				gotN += n
			}
			require.Equal(t, wantN, gotN, "%d instances, Count %+v", k, f)

			wantSum, err := whole.Summary(f)
			require.NoError(t, err)
			wantSum.Fingerprints, err = whole.FingerprintSummary(f)
			require.NoError(t, err)
			sums := make([]api.Summary, len(parts))
			for i, ix := range parts {
				sums[i], err = ix.Summary(f)
				require.NoError(t, err)
				sums[i].Fingerprints, err = ix.FingerprintSummary(f)
				require.NoError(t, err)
			}
			gotSum := MergeSummary(sums)
			require.Len(t, gotSum.Fingerprints, len(wantSum.Fingerprints))
			for i := range gotSum.Fingerprints {
				gotSum.Fingerprints[i].SampleMessage = wantSum.Fingerprints[i].SampleMessage
			}
			require.Equal(t, wantSum, gotSum, "%d instances, Summary %+v", k, f)
		}
	}
}

// A merged page takes the caller's query as a list does: a bad sort,
// limit or cursor is refused.
func TestMergeListRefusesABadQuery(t *testing.T) {
	for name, q := range map[string]api.Query{
		"sort":   {Sort: api.Sort{Field: "nope"}},
		"limit":  {Limit: api.MaxLimit + 1},
		"cursor": {Cursor: "not-a-cursor"},
	} {
		_, err := MergeList(q, nil)
		require.ErrorIs(t, err, ErrInvalidQuery, name)
	}
}
