package projection_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/fanout"
)

// heldSource is a PartitionSource a test sets.
type heldSource struct {
	mu      sync.Mutex
	ids     []string
	changed chan struct{}
	gate    chan struct{} // if set, Held waits for it
}

func newHeldSource(ids []string) *heldSource {
	return &heldSource{ids: ids, changed: make(chan struct{})}
}

func (s *heldSource) Held() []string {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

func (s *heldSource) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Places places every processor but those named "Unplaced...".
func (s *heldSource) Places(processor string) bool {
	return !strings.HasPrefix(processor, "Unplaced")
}

func (s *heldSource) set(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = ids
	close(s.changed)
	s.changed = make(chan struct{})
}

// listIDs returns the ids of every record ix holds.
func listIDs(t *testing.T, ix interface {
	List(api.Query) (api.Page, error)
}) []string {
	t.Helper()
	var ids []string
	q := api.Query{Limit: api.MaxLimit}
	for {
		page, err := ix.List(q)
		require.NoError(t, err)
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.Next == "" {
			slices.Sort(ids)
			return ids
		}
		q.Cursor = page.Next
	}
}

// Three indexes of some partitions on one bucket each hold exactly the
// records of their partitions: when partitions move between them, and
// when a record's function moves it to another processor, whether they
// load every key or their partitions' keys alone. A Querier over their
// Responders answers as the index of every record does.
func TestAnIndexOfSomePartitionsHoldsTheirRecordsAndNoOther(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	full := e.index(t)
	run(t, full)
	processors := []string{"Alpha", "Beta", "Gamma", "Delta"}
	versions := map[string]uint64{}
	sizes := map[string]uint64{}
	for i := range 80 {
		fn := fnA
		fn.ProcessorName = processors[i%len(processors)]
		if i%len(processors) == 0 {
			fn.ProcessorName = "Alpha" // the largest, split
		}
		id := e.create(t, evt(i), fn, "Timeout", &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 60})
		versions[id] = 1
		sizes[fn.ProcessorName]++
	}
	sizes["Alpha"] *= 40 // as if Alpha had many more: split, the others whole
	for id, v := range versions {
		require.NoError(t, full.WaitFor(t.Context(), id, v))
	}
	instances := []string{"a", "b", "c"}
	plan, err := partition.Compute(sizes, instances, partition.Plan{})
	require.NoError(t, err)
	require.Greater(t, plan.Parts("Alpha"), 1)
	require.Equal(t, 1, plan.Parts("Gamma"))

	nc, _ := e.srv.Connect()
	sources := map[string]*heldSource{}
	parts := map[string]*projection.Index{}
	for _, in := range instances {
		sources[in] = newHeldSource(plan.Held(in))
		opts := []projection.IndexOption{projection.WithPartitions(sources[in])}
		if in == "b" {
			opts = append(opts, projection.LoadFilteredAbove(0)) // loads as on a bucket of over a million keys
		}
		parts[in] = e.index(t, opts...)
		run(t, parts[in])
		r, err := fanout.NewResponder(nc, parts[in], fanout.ResponderConfig{Instance: in})
		require.NoError(t, err)
		run(t, r)
	}
	// holdsTheirs waits until every index holds exactly the records plan
	// gives its instance, and says so.
	holdsTheirs := func(plan partition.Plan) {
		t.Helper()
		all := listIDs(t, full)
		testwait.For(t, "every index holds its partitions' records", func() bool {
			for _, in := range instances {
				held, ok := parts[in].Partitions()
				if !ok || !slices.Equal(held, plan.Held(in)) {
					return false
				}
				var want []string
				for _, id := range all {
					v, err := full.Get(t.Context(), id)
					require.NoError(t, err)
					if plan.Owners[plan.Of(v.State.Function.ProcessorName, id)] == in {
						want = append(want, id)
					}
				}
				if !slices.Equal(want, listIDs(t, parts[in])) {
					return false
				}
			}
			return true
		})
	}
	holdsTheirs(plan)

	querier, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: func(context.Context) (partition.Plan, error) { return plan, nil }})
	require.NoError(t, err)
	asks := func() {
		t.Helper()
		for _, f := range []api.Filter{{}, {Processor: "Alpha"}, {View: aggregate.ViewNextRetry}} {
			want, err := full.Count(f)
			require.NoError(t, err)
			got, cov, err := querier.Count(t.Context(), f)
			require.NoError(t, err)
			require.True(t, cov.Complete(), "%+v", cov)
			require.Equal(t, want, got, "%+v", f)
		}
		q := api.Query{Limit: 7, Sort: api.Sort{Field: api.SortNextRetryAt}}
		want, err := full.List(q)
		require.NoError(t, err)
		got, cov, err := querier.List(t.Context(), q)
		require.NoError(t, err)
		require.True(t, cov.Complete(), "%+v", cov)
		require.Equal(t, want, got)
	}
	asks()

	// A partition of a moves to b.
	moved := plan.Held("a")[0]
	next := partition.Plan{Splits: plan.Splits, Owners: maps.Clone(plan.Owners)}
	next.Owners[moved] = "b"
	sources["a"].set(next.Held("a"))
	sources["b"].set(next.Held("b"))
	plan = next
	holdsTheirs(plan)
	asks()

	// A record's function moves it from one instance's partition to
	// another's.
	var rec, from, to, target string
	for id := range versions {
		v, err := full.Get(t.Context(), id)
		require.NoError(t, err)
		if v.State.Function.ProcessorName != "Beta" {
			continue
		}
		from = plan.Owners[plan.Of("Beta", id)]
		for _, p := range []string{"Gamma", "Delta", "Alpha"} {
			if owner := plan.Owners[plan.Of(p, id)]; owner != from {
				rec, to, target = id, owner, p
			}
		}
		if rec != "" {
			break
		}
	}
	require.NotEmpty(t, rec, "a record of Beta that another processor's partition on another instance would hold")
	r, err := e.svc.Execute(t.Context(), rec, aggregate.ChangeFunction{FunctionKind: fnA.FunctionKind, ContextName: fnA.ContextName, ProcessorName: target, Name: fnA.Name}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	require.NoError(t, full.WaitFor(t.Context(), rec, r.Version))
	testwait.For(t, "the record moved to "+to, func() bool {
		return slices.Contains(listIDs(t, parts[to]), rec) && !slices.Contains(listIDs(t, parts[from]), rec)
	})
	holdsTheirs(plan)
	asks()
}

// An index of some partitions reports the records it holds per
// processor, and those of the processors no one holds, so that they are
// placed. Its load reads every key of a small bucket and only its
// partitions' keys of a large one; either way it then follows only its
// partitions' keys.
func TestAnIndexOfSomePartitionsReportsItsSizes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		above     uint64 // the keys above which the load is filtered
		unplaced  uint64 // the views of Unplaced the load reads
		delivered uint64 // by the consumer of the partitions' keys
	}{
		{name: "every key loaded", above: 1 << 40, unplaced: 10, delivered: 1},
		{name: "the partitions' keys loaded", above: 0, unplaced: 0, delivered: 10 + 3 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			run(t, e.projector(t))
			for i := range 30 {
				fn := fnA
				fn.ProcessorName = []string{"Held", "Other", "Unplaced"}[i%3]
				id := e.create(t, evt(i), fn, "Timeout", nil)
				e.waitViews(t, map[string]uint64{id: 1})
			}
			ix := e.index(t, projection.WithPartitions(newHeldSource([]string{"Held"})), projection.LoadFilteredAbove(tc.above))
			run(t, ix)
			testwait.For(t, "the index holds its partitions", func() bool {
				_, ok := ix.Partitions()
				return ok
			})
			held, unplaced := ix.Sizes()
			require.Equal(t, map[string]uint64{"Held": 10}, held)
			require.Equal(t, map[string]uint64{"Unplaced": tc.unplaced}, unplaced, "the views the load read, or 0: known by its key")
			require.Equal(t, []string{"Unplaced"}, ix.Unplaced())

			var ids []string
			for i, p := range []string{"Held", "Other", "Unplaced"} {
				fn := fnA
				fn.ProcessorName = p
				ids = append(ids, e.create(t, evt(100+i), fn, "Timeout", nil))
			}
			testwait.For(t, "the index holds the new view of its partition", func() bool {
				return slices.Contains(listIDs(t, ix), ids[0])
			})
			e.waitViews(t, map[string]uint64{ids[1]: 1, ids[2]: 1})
			filters, delivered := partitionsConsumer(t, e)
			require.Equal(t, []string{"$KV." + projection.DefaultBucket + ".*", "$KV." + projection.DefaultBucket + ".Held.>"}, filters)
			require.Equal(t, tc.delivered, delivered, "the views of Held and the processors' keys, and no other")
			held, _ = ix.Sizes()
			require.Equal(t, map[string]uint64{"Held": 11}, held)
		})
	}
}

// partitionsConsumer returns the filters of the consumer of the Held
// partition's keys on the views bucket, and how many messages it
// delivered.
func partitionsConsumer(t *testing.T, e *env) (filters []string, delivered uint64) {
	t.Helper()
	stream, err := e.js.Stream(t.Context(), "KV_"+projection.DefaultBucket)
	require.NoError(t, err)
	for info := range stream.ListConsumers(t.Context()).Info() {
		if f := info.Config.FilterSubjects; slices.Contains(f, "$KV."+projection.DefaultBucket+".Held.>") {
			filters, delivered = f, info.Delivered.Consumer
		}
	}
	return filters, delivered
}

// Once its partitions change, an index claims none of them until it has
// loaded the new ones: from the change on, not from when it reads them.
func TestAnIndexClaimsNoPartitionFromAChangeUntilItsLoadEnds(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	src := newHeldSource([]string{"Held"})
	ix := e.index(t, projection.WithPartitions(src))
	run(t, ix)
	testwait.For(t, "the index holds its partitions", func() bool {
		held, ok := ix.Partitions()
		return ok && slices.Equal(held, []string{"Held"})
	})
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // before the index stops: a failed wait must not leave it blocked
	src.mu.Lock()
	src.gate = gate // the next load cannot read its partitions yet
	src.mu.Unlock()
	src.set([]string{"Held", "Other"})
	testwait.For(t, "the index claims nothing once its partitions changed", func() bool {
		_, ok := ix.Partitions()
		return !ok
	})
	release()
	testwait.For(t, "the index holds its new partitions", func() bool {
		held, ok := ix.Partitions()
		return ok && slices.Equal(held, []string{"Held", "Other"})
	})
}
