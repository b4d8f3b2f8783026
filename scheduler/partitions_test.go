package scheduler_test

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/scheduler"
)

// partitionSizes are the records per processor the coordinators place:
// Mailer is more than a quarter of a share with three instances, so it
// is split.
var partitionSizes = map[string]uint64{"Mailer": 600, "Billing": 200, "Audit": 100, "Ledger": 60, "Search": 40}

// partitionsRig runs Partitions instances on one server, each on its own
// connection, so that a test can kill one: its connection closes, and it
// can neither renew nor release a lease.
type partitionsRig struct {
	t   *testing.T
	srv *natstest.Server
	ttl time.Duration

	sizes atomic.Pointer[map[string]uint64] // the records per processor the coordinators see

	mu        sync.Mutex
	instances map[string]*rigInstance
	killed    map[string]*rigInstance // still asked what they hold: nothing, once another holds it
}

type rigInstance struct {
	p    *scheduler.Partitions
	nc   *nats.Conn
	stop context.CancelFunc
	done chan struct{}
}

func newPartitionsRig(t *testing.T) *partitionsRig {
	// The TTL leaves a renewal (a third of it) time to spare on a busy
	// machine; the tests wait for leases to expire, never for a clock.
	r := &partitionsRig{t: t, srv: natstest.New(t), ttl: 3 * time.Second,
		instances: map[string]*rigInstance{}, killed: map[string]*rigInstance{}}
	r.sizes.Store(&partitionSizes)
	return r
}

func (r *partitionsRig) start(name string) *scheduler.Partitions {
	r.t.Helper()
	return r.startTicked(name, nil)
}

// startTicked starts name with its rounds on ticks (every renewal
// interval if nil) and on the wakes of the leases and the plan.
func (r *partitionsRig) startTicked(name string, ticks <-chan time.Time) *scheduler.Partitions {
	r.t.Helper()
	nc, js := r.srv.Connect()
	leases, err := scheduler.OpenLeases(r.t.Context(), js, scheduler.WithLeaseTTL(r.ttl))
	require.NoError(r.t, err)
	plans, err := scheduler.OpenPartitions(r.t.Context(), js, 1)
	require.NoError(r.t, err)
	p, err := scheduler.NewPartitions(leases, plans, scheduler.PartitionsConfig{Instance: name, Ticks: ticks,
		Sizes: func() (map[string]uint64, map[string]uint64) { return *r.sizes.Load(), nil }})
	require.NoError(r.t, err)
	ctx, stop := context.WithCancel(context.Background())
	in := &rigInstance{p: p, nc: nc, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		assert.NoError(r.t, p.Run(ctx))
	}()
	r.t.Cleanup(func() { stop(); <-in.done; nc.Close() })
	r.mu.Lock()
	r.instances[name] = in
	r.mu.Unlock()
	return p
}

// kill closes name's connection, as a kill -9 would: its leases expire.
func (r *partitionsRig) kill(name string) {
	r.mu.Lock()
	in := r.instances[name]
	delete(r.instances, name)
	r.killed[name] = in
	r.mu.Unlock()
	in.nc.Close()
}

// stop ends name's Run, which releases its leases.
func (r *partitionsRig) stop(name string) {
	r.mu.Lock()
	in := r.instances[name]
	delete(r.instances, name)
	r.mu.Unlock()
	in.stop()
	<-in.done
}

// holdings returns what each live instance holds, and fails the test if
// two hold one partition.
func (r *partitionsRig) holdings() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	owner := map[string]string{}
	for name, in := range r.instances {
		for _, id := range in.p.Held() {
			for o, by := range owner {
				if partition.Overlap(o, id) {
					r.t.Errorf("partition %s is held by %s and %s, which holds %s, at once", id, name, by, o)
				}
			}
			owner[id] = name
			out[name] = append(out[name], id)
		}
	}
	for name, in := range r.killed {
		for _, id := range in.p.Held() { // until its validity ends
			for o, by := range owner {
				if partition.Overlap(o, id) {
					r.t.Errorf("partition %s is held by %s, which was killed, and by %s, which holds %s", id, name, by, o)
				}
			}
		}
	}
	return out
}

// settled reports whether the live instances hold every partition of
// the plan for their number, each once, each instance within 1.25 times
// its share.
func (r *partitionsRig) settled() bool {
	held := r.holdings()
	r.mu.Lock()
	n := len(r.instances)
	r.mu.Unlock()
	var all []string
	for _, ids := range held {
		all = append(all, ids...)
	}
	plans, err := scheduler.OpenPartitions(r.t.Context(), r.srv.JetStream(), 1)
	require.NoError(r.t, err)
	plan, _, err := plans.Get(r.t.Context(), "plan")
	if err != nil || len(all) != len(plan.Owners) || len(held) != n {
		return false
	}
	members := map[string]bool{}
	for _, owner := range plan.Owners {
		members[owner] = true
	}
	if len(members) != n {
		return false // the plan of other instances
	}
	sizes := *r.sizes.Load()
	if again, err := partition.Compute(sizes, slices.Sorted(maps.Keys(members)), plan); err != nil || !reflect.DeepEqual(again, plan) {
		return false // a plan of other sizes: the coordinator has yet to place them
	}
	var total float64
	for _, s := range sizes {
		total += float64(s)
	}
	for name, ids := range held {
		if !slices.Equal(slices.Sorted(slices.Values(ids)), plan.Held(name)) {
			// Partitions the plan moved, not yet given up and taken: the
			// count matches, but not yet who holds what.
			return false
		}
		var load float64
		for _, id := range ids {
			proc, slots, ok := plan.SlotsOf(id)
			if !ok {
				return false // a partition of another plan, still held
			}
			load += float64(sizes[proc]) * float64(len(slots)) / partition.Slots
		}
		if load > 1.25*total/float64(n)+1e-9 {
			r.t.Errorf("%s holds %.0f records of %.0f with %d instances", name, load, total, n)
		}
	}
	return true
}

// Three instances share every partition, each once; when a fourth joins,
// it takes its part from the others; when the coordinator stops, the
// others take its partitions over at once; when the next coordinator is
// killed, the others take its partitions over once its leases expired,
// and one of them coordinates. At no point do two instances hold one
// partition.
func TestPartitionsAreHeldOnceThroughJoinsStopsAndKills(t *testing.T) {
	r := newPartitionsRig(t)
	for _, name := range []string{"a", "b", "c"} {
		r.start(name)
	}
	testwait.For(t, "three instances hold every partition once", r.settled)

	d := r.start("d")
	testwait.For(t, "the joiner takes its part", func() bool { return r.settled() && len(d.Held()) > 0 })

	r.stop(r.waitCoordinator())
	testwait.For(t, "the others take over a stopped coordinator's partitions", r.settled)

	dead := r.waitCoordinator()
	require.NotEmpty(t, r.holdings()[dead])
	r.kill(dead)
	testwait.For(t, "the others take over a killed coordinator's partitions after its leases expire", r.settled)
	assert.Empty(t, r.killed[dead].p.Held(), "the killed instance counts on none of its leases any more")
	assert.Len(t, r.holdings(), 2, "two instances left, each holding partitions")
	r.waitCoordinator()
}

// waitCoordinator waits until a live instance coordinates and returns it.
func (r *partitionsRig) waitCoordinator() string {
	r.t.Helper()
	testwait.For(r.t, "an instance coordinates", func() bool { return r.coordinator() != "" })
	return r.coordinator()
}

// coordinator returns the live instance that coordinates, if one does.
func (r *partitionsRig) coordinator() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, in := range r.instances {
		if in.p.Coordinating() {
			return name
		}
	}
	return ""
}

// Given the plan overwritten with bytes that are no plan, the instances
// keep what they hold, the coordinator writes a plan again, and every
// partition is held once.
func TestAPlanThatIsNoPlanIsReplaced(t *testing.T) {
	r := newPartitionsRig(t)
	for _, name := range []string{"a", "b"} {
		r.start(name)
	}
	testwait.For(t, "two instances hold every partition once", r.settled)
	kv, err := r.srv.JetStream().KeyValue(t.Context(), scheduler.DefaultPartitionsBucket)
	require.NoError(t, err)
	_, err = kv.Put(t.Context(), "plan", []byte(`{"splits":{"Mailer":3},"owners":{}}`))
	require.NoError(t, err)
	testwait.For(t, "the coordinator writes a plan again", func() bool {
		e, err := kv.Get(t.Context(), "plan")
		return err == nil && !strings.Contains(string(e.Value()), `"Mailer":3`)
	})
	testwait.For(t, "every partition held once again", r.settled)
}

// When processors grow and are split, or the split doubles, the parts are
// taken only once whoever held the whole gave it up: no record is held by
// two instances at any poll.
func TestASplitIsTakenOnceTheWholeIsGivenUp(t *testing.T) {
	r := newPartitionsRig(t)
	for _, name := range []string{"a", "b", "c"} {
		r.start(name)
	}
	testwait.For(t, "three instances hold every partition once", r.settled)
	grown := map[string]uint64{"Mailer": 2400, "Billing": 200, "Audit": 100, "Ledger": 900, "Search": 40}
	r.sizes.Store(&grown)
	testwait.For(t, "the grown processors are split, and every part held once", func() bool {
		if !r.settled() {
			return false
		}
		plans, err := scheduler.OpenPartitions(t.Context(), r.srv.JetStream(), 1)
		require.NoError(t, err)
		plan, _, err := plans.Get(t.Context(), "plan")
		return err == nil && plan.Parts("Ledger") > 1 && plan.Parts("Mailer") > 2
	})
}

// An instance on an older plan still holds Ledger whole (its lease is in
// the bucket): the parts of Ledger that the plan in force gives the live
// instances are taken only once that lease is gone, while the rest of the
// plan is taken at once.
func TestAPartWaitsForTheHolderOfAnOverlappingPartition(t *testing.T) {
	r := newPartitionsRig(t)
	r.ttl = 20 * time.Second // the old holder's lease outlives the first part of the test
	sizes := map[string]uint64{"Ledger": 1000, "Audit": 50, "Search": 50}
	r.sizes.Store(&sizes)
	js := r.srv.JetStream()
	_, err := scheduler.OpenLeases(t.Context(), js, scheduler.WithLeaseTTL(r.ttl))
	require.NoError(t, err)
	kv, err := js.KeyValue(t.Context(), scheduler.DefaultLeaseBucket)
	require.NoError(t, err)
	value, err := json.Marshal(scheduler.NewLeaseValue("old", time.Now().UnixMilli()))
	require.NoError(t, err)
	_, err = kv.Create(t.Context(), "partitions.held.Ledger", value)
	require.NoError(t, err)

	a, b := r.start("a"), r.start("b")
	ledgerParts := func(held []string) (n int) {
		for _, id := range held {
			if strings.HasPrefix(id, "Ledger/") {
				n++
			}
		}
		return n
	}
	// The round that takes the last of the rest also tried Ledger's parts.
	testwait.For(t, "the partitions but Ledger's parts are held", func() bool {
		held := len(a.Held()) + len(b.Held()) - ledgerParts(a.Held()) - ledgerParts(b.Held())
		return held == 2 && r.planParts("Ledger") > 1
	})
	require.Zero(t, ledgerParts(a.Held())+ledgerParts(b.Held()), "a part of Ledger is held while the old holder holds it whole")

	require.NoError(t, kv.Delete(t.Context(), "partitions.held.Ledger"))
	testwait.For(t, "Ledger's parts are held once the old holder's lease is gone", r.settled)
}

// planParts returns how many parts the plan in force splits processor
// into, 0 without a plan.
func (r *partitionsRig) planParts(processor string) int {
	plans, err := scheduler.OpenPartitions(r.t.Context(), r.srv.JetStream(), 1)
	require.NoError(r.t, err)
	plan, _, err := plans.Get(r.t.Context(), "plan")
	if err != nil {
		return 0
	}
	return plan.Parts(processor)
}

// A second process with an instance's name cannot join while the first
// holds its member lease; it can once the first stops. The plan read
// before any is computed is the empty one, and the members are listed.
func TestAnInstanceNameIsTakenByOneProcessAtATime(t *testing.T) {
	r := newPartitionsRig(t)
	_, js := r.srv.Connect()
	leases, err := scheduler.OpenLeases(t.Context(), js, scheduler.WithLeaseTTL(r.ttl))
	require.NoError(t, err)
	plans, err := scheduler.OpenPartitions(t.Context(), js, 1)
	require.NoError(t, err)
	twin, err := scheduler.NewPartitions(leases, plans, scheduler.PartitionsConfig{Instance: "a", Sizes: func() (map[string]uint64, map[string]uint64) { return nil, nil }})
	require.NoError(t, err)
	plan, err := twin.Plan(t.Context())
	require.NoError(t, err)
	require.Empty(t, plan.Owners, "no plan yet: nothing placed")

	r.start("a")
	r.start("b")
	testwait.For(t, "both are members", func() bool {
		m, err := twin.Members(t.Context())
		return err == nil && slices.Equal(m, []string{"a", "b"})
	})
	err = twin.Join(t.Context())
	require.ErrorIs(t, err, scheduler.ErrInstanceTaken)
	require.ErrorContains(t, err, `instance "a"`)
	r.stop("a")
	require.NoError(t, twin.Join(t.Context()))
	require.NoError(t, twin.Join(t.Context()), "joined already: nothing to do")
}

// The partitions bucket is repaired as the other buckets are: nothing to
// do on the settings it has; replicas out of range refused.
func TestThePartitionsBucketIsRepaired(t *testing.T) {
	js := natstest.New(t).JetStream()
	_, err := scheduler.OpenPartitions(t.Context(), js, 1)
	require.NoError(t, err)
	action, diffs, err := scheduler.RepairPartitions(t.Context(), js, 1, true)
	require.NoError(t, err)
	require.Equal(t, "none", action)
	require.Empty(t, diffs)
	_, _, err = scheduler.RepairPartitions(t.Context(), js, 6, false)
	require.ErrorIs(t, err, scheduler.ErrInvalidOption)
	require.ErrorContains(t, err, "between 1 and 5, got 6")
}
