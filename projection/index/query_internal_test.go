package index

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// matches is Filter written against the full state, independently of the
// index's compiled matcher.
func matches(f api.Filter, s *aggregate.State, now time.Time) bool {
	eq := func(want, have string) bool { return want == "" || want == have }
	return eq(f.ID, s.ID) && strings.HasPrefix(s.ID, f.IDPrefix) && eq(f.EventID, s.EventID.ID) &&
		eq(f.AggregateContext, s.EventID.AggregateID.ContextName) && eq(f.AggregateType, s.EventID.AggregateID.AggregateName) &&
		eq(f.AggregateID, s.EventID.AggregateID.AggregateID) && eq(f.FunctionContext, s.Function.ContextName) &&
		eq(f.Processor, s.Function.ProcessorName) && eq(f.Function, s.Function.Name) &&
		eq(string(f.FunctionKind), string(s.Function.FunctionKind)) && eq(string(f.Status), string(s.Status)) &&
		eq(string(f.Recoverable), string(s.Recoverable)) && eq(f.ErrorCode, s.Error.ErrorCode) &&
		(f.ExecuteAtFrom.IsZero() || s.ExecuteAt >= f.ExecuteAtFrom.UnixMilli()) &&
		(f.ExecuteAtTo.IsZero() || s.ExecuteAt < f.ExecuteAtTo.UnixMilli()) &&
		(f.NextRetryAtFrom.IsZero() || s.RetryState.NextRetryAt >= f.NextRetryAtFrom.UnixMilli()) &&
		(f.NextRetryAtTo.IsZero() || s.RetryState.NextRetryAt < f.NextRetryAtTo.UnixMilli()) &&
		s.RetryState.Retries >= f.MinRetries &&
		(f.View == "" || f.View.Contains(s, now))
}

// Paging through List with its cursor yields exactly the matching records
// in sort order, for random filters, sorts and page sizes; Count agrees.
func TestListPagesAreTheFilteredSortedRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	views := randomViews(r, 3000)
	now := time.UnixMilli(base + 1_800_000)
	ix := memIndex(now, views)
	type keyed struct {
		keys [numSortFields]int64
		tie  uint64
		v    *api.View
	}
	all := make([]keyed, len(views))
	for i := range views {
		e := entryOf(&views[i], ix.names)
		all[i] = keyed{tie: tieOf(e.id), v: &views[i]}
		for f := range numSortFields {
			all[i].keys[f] = sortField(f).key(&e)
		}
	}
	for range 400 {
		f := randomFilter(r, &views[r.IntN(len(views))], now)
		sort := api.Sort{Field: api.SortFields[r.IntN(len(api.SortFields))], Desc: r.IntN(2) == 0}
		field, err := fieldOf(sort)
		require.NoError(t, err)
		var want []string
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, func(a, b keyed) int {
			c := cmp.Or(cmp.Compare(a.keys[field], b.keys[field]), cmp.Compare(a.tie, b.tie))
			if sort.Desc {
				return -c
			}
			return c
		})
		for _, k := range sorted {
			if matches(f, &k.v.State, now) {
				want = append(want, k.v.State.ID)
			}
		}
		q := api.Query{Filter: f, Sort: sort, Limit: 1 + r.IntN(100)}
		var got []string
		for pages := 0; ; pages++ {
			require.Less(t, pages, len(views)+2, "paging ends")
			p, err := ix.List(q)
			require.NoError(t, err)
			require.LessOrEqual(t, len(p.Items), q.Limit)
			for _, it := range p.Items {
				got = append(got, it.ID)
			}
			if p.Next == "" {
				break
			}
			q.Cursor = p.Next
		}
		require.Equal(t, want, got, "List %+v", q)
		n, err := ix.Count(f)
		require.NoError(t, err)
		require.Equal(t, len(want), n, "Count %+v", f)
	}
}

// A cursor is a place in the order: records that do not change between
// pages are listed exactly once while others come, go and move.
func TestListCursorIsStableUnderChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	views := randomViews(r, 2000)
	now := time.UnixMilli(base)
	ix := memIndex(now, views)
	stable := map[string]bool{}
	for i := range views {
		if i%2 == 0 {
			stable[views[i].State.ID] = true
		}
	}
	seen := map[string]int{}
	q := api.Query{Sort: api.Sort{Field: api.SortNextRetryAt}, Limit: 37}
	for {
		p, err := ix.List(q)
		require.NoError(t, err)
		for _, it := range p.Items {
			seen[it.ID]++
		}
		// Change an odd record between pages: move it, or remove it.
		ix.mu.Lock()
		for range 20 {
			k := 2*r.IntN(len(views)/2) + 1
			if r.IntN(3) == 0 {
				ix.remove(views[k].State.ID)
				continue
			}
			next := randomView(r, k)
			next.Version = views[k].Version + 1
			views[k] = next
			ix.put(&views[k])
		}
		ix.mu.Unlock()
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	for id := range stable {
		require.Equal(t, 1, seen[id], "unchanged record %s listed once", id)
	}
}

func TestListRejectsBadQueries(t *testing.T) {
	ix := memIndex(time.UnixMilli(base), nil)
	for name, q := range map[string]api.Query{
		"sort field":      {Sort: api.Sort{Field: "id"}},
		"limit too large": {Limit: api.MaxLimit + 1},
		"negative limit":  {Limit: -1},
		"view":            {Filter: api.Filter{View: "later"}},
		"cursor":          {Cursor: "nope"},
		"foreign cursor":  {Cursor: cursor{query: 1}.String()},
	} {
		_, err := ix.List(q)
		require.ErrorIs(t, err, ErrInvalidQuery, name)
	}
}

// A cursor continues a listing whose pages each have their own Now, as
// those without one each have the clock's; another filter still refuses
// it.
func TestACursorOutlivesTheNowOfItsPage(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	now := time.UnixMilli(base + 1_800_000)
	ix := memIndex(now, randomViews(r, 200))
	q := api.Query{Filter: api.Filter{View: aggregate.ViewToRetry, Now: now}, Limit: 5}
	page, err := ix.List(q)
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)
	q.Cursor, q.Filter.Now = page.Next, now.Add(time.Minute)
	_, err = ix.List(q)
	require.NoError(t, err)
	q.Filter.View = aggregate.ViewNextRetry
	_, err = ix.List(q)
	require.ErrorIs(t, err, ErrInvalidQuery)
}
