package scheduler_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/scheduler"
)

// sends counts, per record, the prepares each instance sent.
type sends struct {
	mu sync.Mutex
	by map[string][]string // record -> instances
}

func (s *sends) of(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.by[id]...)
}

// sendingAs is an Executor that counts the prepares instance sends.
type sendingAs struct {
	scheduler.Executor
	instance string
	sends    *sends
}

func (x sendingAs) Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error) {
	x.sends.mu.Lock()
	x.sends.by[id] = append(x.sends.by[id], x.instance)
	x.sends.mu.Unlock()
	return x.Executor.Execute(ctx, id, c, meta)
}

// With partitions, every instance prepares the due records of the
// partitions it holds, and no other: each record is prepared once, by the
// holder of its partition. When an instance stops, the others hold its
// partitions and prepare their records.
func TestEachPartitionsRecordsArePreparedByItsHolder(t *testing.T) {
	srv := natstest.New(t)
	e := newEnv(t, srv.JetStream(), 1, 3*time.Second)
	processors := []string{"Billing", "Mailer", "Ledger", "Search", "Audit"}
	sizes := map[string]uint64{}
	for _, p := range processors {
		sizes[p] = 100
	}
	var nextRecord int
	create := func(n int) map[string]uint64 {
		versions := map[string]uint64{}
		for range n {
			i := nextRecord
			nextRecord++
			f := fn
			f.ProcessorName = processors[i%len(processors)]
			id, v := e.createOf(t, i, f, aggregate.Recoverable)
			versions[id] = v
		}
		e.indexed(t, versions)
		return versions
	}

	sent := &sends{by: map[string][]string{}}
	type instance struct {
		parts *scheduler.Partitions
		ticks chan time.Time
		stop  func()
	}
	instances := map[string]*instance{}
	for _, name := range []string{"a", "b", "c"} {
		_, js := srv.Connect()
		leases, err := scheduler.OpenLeases(t.Context(), js, scheduler.WithLeaseTTL(3*time.Second))
		require.NoError(t, err)
		plans, err := scheduler.OpenPartitions(t.Context(), js, 1)
		require.NoError(t, err)
		parts, err := scheduler.NewPartitions(leases, plans, scheduler.PartitionsConfig{Instance: name, Sizes: func() (map[string]uint64, map[string]uint64) { return sizes, nil }})
		require.NoError(t, err)
		in := &instance{parts: parts, ticks: make(chan time.Time)}
		stopParts := run(t, parts)
		s, err := scheduler.New(e.index, sendingAs{e.svc, name, sent}, leases, scheduler.WithClock(e.clock), scheduler.WithTicks(in.ticks),
			scheduler.WithInstance(name), scheduler.WithPartitions(parts), scheduler.WithBatch(7))
		require.NoError(t, err)
		stopSched := run(t, s)
		in.stop = func() { stopSched(); stopParts() }
		instances[name] = in
	}
	plan := func() partition.Plan {
		plans, err := scheduler.OpenPartitions(t.Context(), srv.JetStream(), 1)
		require.NoError(t, err)
		p, _, err := plans.Get(t.Context(), "plan")
		require.NoError(t, err)
		return p
	}
	// settled: every partition of the plan is held by its owner, and the
	// live instances, all of them and only they, own partitions.
	settled := func() bool {
		plans, err := scheduler.OpenPartitions(t.Context(), srv.JetStream(), 1)
		require.NoError(t, err)
		p, _, err := plans.Get(t.Context(), "plan")
		if err != nil || len(p.Owners) == 0 {
			return false
		}
		owners := map[string]bool{}
		for id, owner := range p.Owners {
			in := instances[owner]
			if in == nil || !slices.Contains(in.parts.Held(), id) {
				return false
			}
			owners[owner] = true
		}
		return len(owners) == len(instances) // the plan of every live instance
	}
	// pass ticks the live instances until every record of versions has
	// been prepared (a pass stops at a batch that prepares nothing new,
	// while the index catches up with the last).
	pass := func(versions map[string]uint64) {
		e.clock.Set(e.clock.Now().Add(time.Minute))
		testwait.For(t, "every record is prepared", func() bool {
			for _, in := range instances {
				select {
				case in.ticks <- e.clock.Now():
				default: // a pass is running
				}
			}
			for id := range versions {
				if len(e.prepares(t, id)) == 0 {
					return false
				}
			}
			return true
		})
	}
	check := func(versions map[string]uint64) {
		p := plan()
		for id := range versions {
			s, _, err := e.svc.Get(t.Context(), id)
			require.NoError(t, err)
			owner := p.Owners[p.Of(s.Function.ProcessorName, id)]
			// A pass that lists a record the index has not yet seen
			// prepared sends its prepare again, which appends nothing.
			by := sent.of(id)
			require.NotEmpty(t, by)
			for _, in := range by {
				require.Equal(t, owner, in, "record %s of %s is prepared by the holder of %s only", id, s.Function.ProcessorName, p.Of(s.Function.ProcessorName, id))
			}
			require.Len(t, e.prepares(t, id), 1, "record %s is prepared once", id)
		}
	}

	testwait.For(t, "three instances hold the partitions", settled)
	first := create(60)
	pass(first)
	check(first)

	instances["c"].stop()
	delete(instances, "c")
	testwait.For(t, "two instances hold the partitions", settled)
	second := create(60)
	pass(second)
	check(second)
}
