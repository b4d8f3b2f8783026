package scheduler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/scheduler"
)

// partitionedDrain is two schedulers on partitions over one drainEnv,
// fn's processor split between them.
type partitionedDrain struct {
	*drainEnv
	parts  map[string]*scheduler.Partitions
	scheds map[string]*scheduler.Scheduler
	passes map[string]chan time.Time
	drains map[string]chan time.Time
	sent   *sends
}

func newPartitionedDrain(t *testing.T) *partitionedDrain {
	e := newDrainEnv(t)
	r := &partitionedDrain{drainEnv: e, parts: map[string]*scheduler.Partitions{}, scheds: map[string]*scheduler.Scheduler{},
		passes: map[string]chan time.Time{}, drains: map[string]chan time.Time{}, sent: &sends{by: map[string][]string{}}}
	// fn's processor is most of the records: it is split, a part on each.
	sizes := map[string]uint64{fn.ProcessorName: 1000, "Ledger": 100}
	plans, err := scheduler.OpenPartitions(t.Context(), e.js, 1)
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		p, err := scheduler.NewPartitions(e.leases, plans, scheduler.PartitionsConfig{Instance: name,
			Sizes: func() (map[string]uint64, map[string]uint64) { return sizes, nil }})
		require.NoError(t, err)
		run(t, p)
		r.parts[name], r.passes[name], r.drains[name] = p, make(chan time.Time), make(chan time.Time)
		r.scheds[name] = e.scheduler(t, sendingAs{e.svc, name, r.sent}, scheduler.WithTicks(r.passes[name]), scheduler.WithLogger(quietLog()),
			scheduler.WithInstance(name), scheduler.WithPartitions(p),
			scheduler.WithDrains(scheduler.DrainConfig{Circuits: e.watcher, Store: e.circuits, Records: e.index, Progress: e.drains,
				Policy: scheduler.DrainPolicy{Rate: 1000}, Ticks: r.drains[name], CircuitPolicy: circuit.Policy{CoolDown: 10 * time.Second}}))
		run(t, r.scheds[name])
	}
	testwait.For(t, "each instance holds a part of the processor, one of them its first", func() bool {
		return r.parts["a"].HoldsAnyOf(fn.ProcessorName) && r.parts["b"].HoldsAnyOf(fn.ProcessorName) &&
			r.parts["a"].Leads(fn.ProcessorName) != r.parts["b"].Leads(fn.ProcessorName)
	})
	return r
}

// roles returns the instance that leads fn's processor and the other.
func (r *partitionedDrain) roles() (lead, other string) {
	if r.parts["a"].Leads(fn.ProcessorName) {
		return "a", "b"
	}
	return "b", "a"
}

// tick sends a tick to ch, once the loop that reads it takes it.
func (r *partitionedDrain) tick(t *testing.T, ch chan time.Time) {
	t.Helper()
	select {
	case ch <- r.clock.Now():
	case <-time.After(waitFor):
		t.Fatal("a loop does not take ticks")
	}
}

// pass runs a pass of name, and returns once it ended.
func (r *partitionedDrain) pass(t *testing.T, name string) {
	t.Helper()
	before := r.scheds[name].Stats().Passes
	r.tick(t, r.passes[name])
	testwait.For(t, "the pass ends", func() bool { return r.scheds[name].Stats().Passes > before })
}

// With partitions, a function's recovery drain runs on the instance that
// holds its processor's first partition, and on no other. The instance
// that holds another part of the processor leaves the function's records
// to the drain: from when the circuit closes (before the drain started),
// while it drains (the drain as the other instance stores it), and
// prepares its part's records again once the drain is done.
func TestADrainRunsOnTheHolderOfItsProcessorsFirstPartition(t *testing.T) {
	r := newPartitionedDrain(t)
	lead, other := r.roles()
	r.pause(t)
	r.clock.Set(t0.Add(time.Minute))
	incident := r.records(t, 100, 24, "Unavailable")
	plan, err := r.parts[lead].Plan(t.Context())
	require.NoError(t, err)
	var others []string // records of the incident in a part the other instance holds
	for _, id := range incident {
		if plan.Owners[plan.Of(fn.ProcessorName, id)] == other {
			others = append(others, id)
		}
	}
	require.NotEmpty(t, others, "some of the incident's records are in the other instance's part")
	require.Less(t, len(others), len(incident), "and some in the first part's holder's")

	trip := opened
	trip.FirstFailureAt = r.clock.Now().UnixMilli()
	r.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, r.clock.Now(), resolved(t, circuit.Policy{CoolDown: 10 * time.Second}), trip)
	})
	r.clock.Set(t0.Add(time.Minute + 5*time.Second))
	r.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, r.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "back"})
	})
	// Every record is due. The other instance's drain loop has seen the
	// closed circuit; no drain has started: its pass holds them anyway.
	r.clock.Set(t0.Add(3 * time.Hour))
	r.tick(t, r.drains[other])
	r.pass(t, other)
	assert.Equal(t, len(others), r.scheds[other].Stats().Held, "the other instance holds its part's records of the incident")

	// The lead's drain runs; the other's drain ticks follow it, and its
	// passes prepare none of the records the drain has not prepared yet.
	r.paused.Store(false)
	deadline := time.Now().Add(waitFor)
	for {
		r.clock.Set(r.clock.Now().Add(10 * time.Millisecond))
		r.tick(t, r.drains[lead])
		r.tick(t, r.drains[other])
		r.pass(t, other)
		d, ok, err := r.drainEnv.drains.Get(t.Context(), fnCircuit)
		require.NoError(t, err)
		if ok && d.Phase == circuit.DrainDone {
			break
		}
		require.True(t, time.Now().Before(deadline), "the drain ends within %s: %+v", waitFor, d)
	}
	for _, id := range incident {
		assert.Equal(t, []string{lead}, r.sent.of(id), "record %s is prepared by the drain, on the first part's holder", id)
		assert.Len(t, r.prepares(t, id), 1, "record %s is prepared once", id)
	}
	assert.Equal(t, uint64(1), r.scheds[lead].Stats().Drains.Done)
	assert.Zero(t, r.scheds[other].Stats().Drains.Started, "the other instance runs no drain of the function")

	// Done: a later failure in the other instance's part is its passes'.
	var later string
	for i := 500; later == ""; i++ {
		if id, v := r.createOf(t, i, fn, aggregate.Recoverable); plan.Owners[plan.Of(fn.ProcessorName, id)] == other {
			r.indexed(t, map[string]uint64{id: v})
			later = id
		}
	}
	r.clock.Set(r.clock.Now().Add(time.Hour))
	testwait.For(t, "the other instance prepares its part's later record", func() bool {
		r.tick(t, r.drains[other])
		r.pass(t, other)
		return slices.Contains(r.sent.of(later), other)
	})
	assert.Equal(t, []string{other}, r.sent.of(later))
}
