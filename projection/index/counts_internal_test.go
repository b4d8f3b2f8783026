package index

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// The property tests of the counts: after random upserts, state changes
// and deletes, every Count, Summary and List page answers as a scan of
// the records would, whichever way the index finds them.

// scanMatches is Filter written against the full state, independently of
// the index: every field, fingerprint included.
func scanMatches(f api.Filter, s *aggregate.State, now time.Time) bool {
	return matches(f, s, now) && (f.Fingerprint == "" || f.Fingerprint == s.Error.Fingerprint)
}

// scanSummary is Summary written as a scan of the full states.
func scanSummary(views map[string]api.View, f api.Filter, now time.Time) api.Summary {
	sum := api.Summary{Views: map[aggregate.View]int{}}
	groups := map[[4]string]*api.FailureGroup{}
	statuses := map[api.StatusCount]int{}
	for _, v := range views {
		s := v.State
		if !scanMatches(f, &s, now) {
			continue
		}
		sum.Total++
		statuses[api.StatusCount{Status: s.Status, Recoverable: s.Recoverable}]++
		for _, w := range aggregate.Views {
			if w.Contains(&s, now) {
				sum.Views[w]++
			}
		}
		k := [4]string{s.Function.ContextName, s.Function.ProcessorName, s.Function.Name, s.Error.ErrorCode}
		g := groups[k]
		if g == nil {
			g = &api.FailureGroup{FunctionContext: k[0], Processor: k[1], Function: k[2], ErrorCode: k[3]}
			groups[k] = g
		}
		addTo(g, &s)
	}
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	for k, n := range statuses {
		k.Count = n
		sum.ByStatus = append(sum.ByStatus, k)
	}
	sortSummary(&sum)
	return sum
}

// scanList is the ids of the records that match q.Filter in q.Sort order.
func scanList(views map[string]api.View, q api.Query, now time.Time) []string {
	field, _ := fieldOf(q.Sort)
	type keyed struct {
		key int64
		tie uint64
		id  string
	}
	var ks []keyed
	in := newInterner()
	for _, v := range views {
		if scanMatches(q.Filter, &v.State, now) {
			e := entryOf(&v, in)
			ks = append(ks, keyed{field.key(&e), tieOf(e.id), unpackID(e.id)})
		}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		c := cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.tie, b.tie))
		if q.Sort.Desc {
			return -c
		}
		return c
	})
	out := []string{}
	for _, k := range ks {
		out = append(out, k.id)
	}
	return out
}

func pick[T any](t *rapid.T, label string, values ...T) T {
	return values[rapid.IntRange(0, len(values)-1).Draw(t, label)]
}

const (
	pMinute = int64(60_000)
)

// drawTime is an instant near base, with extra weight on a few values
// that records share, and now and then an extreme.
func drawTime(t *rapid.T, label string) int64 {
	switch rapid.IntRange(0, 9).Draw(t, label+" kind") {
	case 0:
		return pick(t, label, int64(math.MaxInt64), int64(math.MinInt64), base+1)
	case 1, 2, 3:
		return base + pMinute*int64(rapid.IntRange(0, 4).Draw(t, label))
	default:
		return base + int64(rapid.IntRange(-10, 5*60_000).Draw(t, label))
	}
}

func drawView(t *rapid.T, id string, version uint64) api.View {
	fn := pick(t, "function", "f1", "f2")
	code := pick(t, "code", "E1", "E2", "")
	return api.View{
		State: aggregate.State{
			ID: id,
			EventID: aggregate.EventID{
				ID: pick(t, "event", "ev1", "ev2", "ev3", "ev4"),
				AggregateID: aggregate.WireAggregateID{ContextName: pick(t, "aggCtx", "order", "billing"),
					AggregateName: pick(t, "aggType", "order", "invoice"), AggregateID: pick(t, "aggId", "a1", "a2", "a3"),
					TenantID: aggregate.DefaultTenantID},
				Version: 1,
			},
			Function: aggregate.FunctionInfo{FunctionKind: pick(t, "kind", aggregate.FunctionKinds...),
				ContextName: pick(t, "fnCtx", "svc", "other"), ProcessorName: pick(t, "processor", "P1", "P2"), Name: fn},
			Error: aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "boom",
				Fingerprint: pick(t, "fingerprint", "", "fp-"+fn+code, "fp-x")},
			ExecuteAt:   base + int64(rapid.IntRange(1, 5*60_000).Draw(t, "executeAt")),
			RetrySpec:   aggregate.RetrySpec{MaxRetries: int32(rapid.IntRange(0, 3).Draw(t, "maxRetries"))},
			RetryState:  aggregate.RetryState{Retries: int32(rapid.IntRange(0, 3).Draw(t, "retries")), TimeoutAt: drawTime(t, "timeoutAt"), NextRetryAt: drawTime(t, "nextRetryAt")},
			Status:      pick(t, "status", aggregate.StatusFailed, aggregate.StatusFailed, aggregate.StatusPrepared, aggregate.StatusSucceeded, ""),
			Recoverable: pick(t, "recoverable", aggregate.Recoverabilities...),
		},
		Version: version,
	}
}

// drawFilter sets a few fields, mostly to values records hold.
func drawFilter(t *rapid.T) api.Filter {
	var f api.Filter
	tm := func(label string) time.Time {
		return time.UnixMilli(base + pMinute*int64(rapid.IntRange(-1, 5).Draw(t, label)))
	}
	for range rapid.IntRange(0, 3).Draw(t, "fields") {
		switch rapid.IntRange(0, 20).Draw(t, "field") {
		case 0:
			f.ID = pick(t, "id", "r0", "r1", "r2", "nope")
		case 19:
			f.IDPrefix = pick(t, "idPrefix", "6ba7", "007f08f7", "r0", "nope")
		case 1:
			f.EventID = pick(t, "eventId", "ev1", "ev2", "nope")
		case 2:
			f.AggregateContext = pick(t, "aggregateContext", "order", "billing", "nope")
		case 3:
			f.AggregateType = pick(t, "aggregateType", "order", "invoice")
		case 4:
			f.AggregateID = pick(t, "aggregateId", "a1", "a2", "nope")
		case 5:
			f.FunctionContext = pick(t, "functionContext", "svc", "other")
		case 6:
			f.Processor = pick(t, "processor", "P1", "P2", "nope")
		case 7:
			f.Function = pick(t, "function", "f1", "f2")
		case 8:
			f.FunctionKind = pick(t, "functionKind", aggregate.FunctionKinds...)
		case 9:
			f.Status = pick(t, "status", aggregate.Statuses...)
		case 10:
			f.Recoverable = pick(t, "recoverable", aggregate.Recoverabilities...)
		case 11:
			f.ErrorCode = pick(t, "errorCode", "E1", "E2", "nope")
		case 12:
			f.Fingerprint = pick(t, "fingerprint", "fp-f1E1", "fp-x", "nope")
		case 13:
			f.ExecuteAtFrom = tm("executeAtFrom")
		case 14:
			f.ExecuteAtTo = tm("executeAtTo")
		case 15:
			f.NextRetryAtFrom = tm("nextRetryAtFrom")
		case 16:
			f.NextRetryAtTo = tm("nextRetryAtTo")
		case 17:
			f.MinRetries = int32(rapid.IntRange(-1, 4).Draw(t, "minRetries"))
		default:
			f.View = pick(t, "view", aggregate.Views...)
		}
	}
	return f
}

func TestCountsAnswerAsAScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var now atomicTime
		ix := memIndex(time.Time{}, nil)
		ix.clock = aggregate.ClockFunc(now.get)
		model := map[string]api.View{}
		version := uint64(1)
		ids := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9",
			"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "007f08f7-90af-587f-b415-759a797ed8d6"}
		// The first steps may be a first load in bulk (load.go): the index
		// answers once it ends.
		loadSteps := 0
		if rapid.Bool().Draw(t, "bulk") {
			loadSteps = rapid.IntRange(0, 40).Draw(t, "load steps")
			ix.mu.Lock()
			ix.beginLoad()
			ix.mu.Unlock()
		}
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			if step == loadSteps && ix.loading != nil {
				ix.mu.Lock()
				ix.finishLoad()
				ix.mu.Unlock()
			}
			id := pick(t, "record", ids...)
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1:
				ix.mu.Lock()
				ix.remove(id)
				ix.mu.Unlock()
				delete(model, id)
			case 2:
				// An older view is ignored.
				if old, ok := model[id]; ok {
					v := drawView(t, id, old.Version-1)
					ix.Put(v)
				}
			default:
				version++
				v := drawView(t, id, version)
				ix.Put(v)
				model[id] = v
			}
			if step < loadSteps || rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("check %d", step)) > 0 {
				continue
			}
			requireAnswersAsScan(t, ix, model, &now)
		}
		if ix.loading != nil {
			ix.mu.Lock()
			ix.finishLoad()
			ix.mu.Unlock()
		}
		require.Equal(t, len(model), ix.Len())
	})
}

// requireAnswersAsScan moves now (mostly forward, as the index's now
// does, see rlockAt; now and then back), draws a filter and a sort, and
// requires Count, Summary and every page of List to answer as a scan of
// model would.
func requireAnswersAsScan(t *rapid.T, ix *Index, model map[string]api.View, now *atomicTime) {
	ms := drawTime(t, "now")
	if rapid.IntRange(0, 3).Draw(t, "forward") > 0 && !now.get().IsZero() {
		ms = max(ms, now.get().UnixMilli())
	}
	now.set(time.UnixMilli(ms))
	f := drawFilter(t)
	at := now.get()
	n, err := ix.Count(f)
	require.NoError(t, err)
	want := scanSummary(model, f, at)
	require.Equal(t, want.Total, n, "Count(%+v) at %d", f, at.UnixMilli())
	got, err := ix.Summary(f)
	require.NoError(t, err)
	require.Equal(t, want, got, "Summary(%+v) at %d", f, at.UnixMilli())

	q := api.Query{Filter: f, Sort: api.Sort{Field: pick(t, "sort", api.SortFields...), Desc: rapid.Bool().Draw(t, "desc")},
		Limit: rapid.IntRange(1, 4).Draw(t, "limit")}
	wantIDs := scanList(model, q, at)
	gotIDs := []string{}
	for pages := 0; ; pages++ {
		require.LessOrEqual(t, pages, len(model)+1, "paging ends")
		p, err := ix.List(q)
		require.NoError(t, err)
		for _, it := range p.Items {
			gotIDs = append(gotIDs, it.ID)
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	require.Equal(t, wantIDs, gotIDs, "List(%+v) at %d", q, at.UnixMilli())
}

// atomicTime is a settable clock for one goroutine's test.
type atomicTime struct{ t time.Time }

func (a *atomicTime) get() time.Time  { return a.t }
func (a *atomicTime) set(t time.Time) { a.t = t }

// FingerprintSummary from the counts answers as its scan does, but for
// the names of a fingerprint met in several groups: they are one of them.
func TestFingerprintCountsAnswerAsAScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ix := memIndex(time.UnixMilli(base), nil)
		for i := range rapid.IntRange(0, 40).Draw(t, "records") {
			ix.Put(drawView(t, fmt.Sprintf("r%d", i), 1))
		}
		var f api.Filter
		switch rapid.IntRange(0, 3).Draw(t, "filter") {
		case 1:
			f.Processor = pick(t, "processor", "P1", "P2", "nope")
		case 2:
			f.Fingerprint = pick(t, "fingerprint", "fp-f1E1", "fp-x")
		case 3:
			f.Function, f.ErrorCode = pick(t, "function", "f1", "f2"), pick(t, "errorCode", "E1", "")
		}
		got, err := ix.FingerprintSummary(f)
		require.NoError(t, err)
		ix.mu.RLock()
		m := ix.compile(f)
		groups := ix.fingerprintScan(&m)
		ix.mu.RUnlock()
		want := sortFingerprints(groups)
		for _, list := range [][]api.FingerprintGroup{want, got} {
			for i := range list {
				g := &list[i]
				require.NotEmpty(t, g.Function, "the names of one of its groups")
				g.FunctionContext, g.Processor, g.Function, g.ErrorCode = "", "", "", ""
			}
		}
		require.Equal(t, want, got)
	})
}
