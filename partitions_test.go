package amends_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/fanout"
	"github.com/amends-dev/amends/scheduler"
)

// partitioned is the control plane split over instances on one NATS
// server, as several serve instances would run it (issue #42): each
// instance holds partitions (scheduler.Partitions), indexes their records
// (projection.WithPartitions), prepares their due records
// (scheduler.WithPartitions) and answers queries for them
// (fanout.Responder); a Querier asks them all.
type partitioned struct {
	t     *testing.T
	srv   *natstest.Server
	clock *fakeclock.Clock
	svc   *aggregate.Service
	full  *projection.Index // every record, for the answers expected

	mu        sync.Mutex
	instances map[string]*member
}

// member is one instance, on its own connection.
type member struct {
	nc    *nats.Conn
	parts *scheduler.Partitions
	index *projection.Index
	ticks chan time.Time
}

// quiet discards the logs of instances that are killed on purpose.
var quiet = slog.New(slog.DiscardHandler)

// leaseTTL is the partitions' lease TTL: a killed instance's partitions
// are taken over within it and a renewal.
const leaseTTL = 3 * time.Second

func (c *partitioned) start(name string) {
	t := c.t
	nc, js := c.srv.Connect()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	leases, err := scheduler.OpenLeases(t.Context(), js, scheduler.WithLeaseTTL(leaseTTL))
	require.NoError(t, err)
	plans, err := scheduler.OpenPartitions(t.Context(), js, 1)
	require.NoError(t, err)
	// Each instance reports what its index holds, and the processors it
	// sees that no one holds: from none, at the start.
	var index *projection.Index
	parts, err := scheduler.NewPartitions(leases, plans, scheduler.PartitionsConfig{Instance: name, Sizes: func() (map[string]uint64, map[string]uint64) { return index.Sizes() }})
	require.NoError(t, err)
	index, err = projection.NewIndex(views, store, projection.WithClock(c.clock), projection.WithPartitions(parts), projection.WithIndexLogger(quiet))
	require.NoError(t, err)
	m := &member{nc: nc, parts: parts, index: index, ticks: make(chan time.Time)}
	sched, err := scheduler.New(index, aggregate.NewService(store, aggregate.WithClock(c.clock)), leases,
		scheduler.WithClock(c.clock), scheduler.WithTicks(m.ticks), scheduler.WithInstance(name), scheduler.WithPartitions(parts), scheduler.WithBatch(25), scheduler.WithLogger(quiet))
	require.NoError(t, err)
	responder, err := fanout.NewResponder(nc, index, fanout.ResponderConfig{Instance: name})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range []interface{ Run(context.Context) error }{parts, index, sched, responder} {
		wg.Go(func() { _ = r.Run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait(); nc.Close() })
	c.mu.Lock()
	c.instances[name] = m
	c.mu.Unlock()
}

// kill closes name's connection, as a kill -9 would: it neither renews
// nor releases its leases, and answers nothing.
func (c *partitioned) kill(name string) {
	c.mu.Lock()
	m := c.instances[name]
	delete(c.instances, name)
	c.mu.Unlock()
	m.nc.Close()
}

// plan reads the plan in force.
func (c *partitioned) plan(ctx context.Context) (partition.Plan, error) {
	plans, err := scheduler.OpenPartitions(ctx, c.srv.JetStream(), 1)
	if err != nil {
		return partition.Plan{}, err
	}
	p, _, err := plans.Get(ctx, "plan")
	return p, err
}

// served reports whether the plan places partitions on the live
// instances, all of them and only they, and each instance's index holds
// its partitions in full.
func (c *partitioned) served() bool {
	plan, err := c.plan(c.t.Context())
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	owners := map[string]bool{}
	for _, owner := range plan.Owners {
		owners[owner] = true
	}
	if len(owners) != len(c.instances) {
		return false
	}
	for name, m := range c.instances {
		held, ok := m.index.Partitions()
		if !owners[name] || !ok || !slices.Equal(held, plan.Held(name)) {
			return false
		}
	}
	return true
}

// neverShort asks q for the count of the records of context "shop" (those
// not being created meanwhile) and checks that the answer, with the
// records of the partitions it names missing, makes the whole count; it
// reports whether nothing was missing.
func (c *partitioned) neverShort(q *fanout.Querier) bool {
	t := c.t
	stable := api.Filter{FunctionContext: "shop"}
	n, cov, err := q.Count(t.Context(), stable)
	if err != nil {
		return false // replies that overlap while partitions move: said, not short
	}
	want, err := c.full.Count(stable)
	require.NoError(t, err)
	missing := 0
	for _, id := range listAll(t, c.full, stable) {
		v, err := c.full.Get(t.Context(), id)
		require.NoError(t, err)
		// Missing names partitions of the plan the querier read, which may
		// be newer than any other read here: a record is missing when one
		// of them holds it.
		if slices.ContainsFunc(cov.Missing, func(m string) bool { return partition.Holds(m, v.State.Function.ProcessorName, id) }) {
			missing++
		}
	}
	// The answer holds no record twice, and lacks only records of the
	// partitions it names (an instance may still answer for parts of one).
	require.LessOrEqual(t, n, want, "answered %d, missing %v (%d records)", n, cov.Missing, missing)
	require.LessOrEqual(t, want-n, missing, "answered %d of %d, missing %v (%d records)", n, want, cov.Missing, missing)
	return cov.Complete()
}

// preparedEvents counts the CompensationPrepared events of record id.
func preparedEvents(t *testing.T, store *jsstore.Store, id string) int {
	streams, err := store.Load(t.Context(), aggregate.RecordAggregate(id), 1)
	require.NoError(t, err)
	n := 0
	for _, st := range streams {
		for _, ev := range st.Events {
			e, err := aggregate.DecodeEvent(ev.Name, ev.Body)
			require.NoError(t, err)
			if _, ok := e.(aggregate.CompensationPrepared); ok {
				n++
			}
		}
	}
	return n
}

func listAll(t *testing.T, ix *projection.Index, f api.Filter) []string {
	var ids []string
	q := api.Query{Filter: f, Limit: api.MaxLimit}
	for {
		page, err := ix.List(q)
		require.NoError(t, err)
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.Next == "" {
			return ids
		}
		q.Cursor = page.Next
	}
}

// Three instances share the partitions; in three rounds, one is killed
// and another starts while records are created. The partitions are
// served again by the live instances; meanwhile no answer is short
// without naming the partitions it lacks; every due record is prepared
// once, by the holder of its partition.
func TestPartitionedInstancesServeEveryPartitionThroughAKill(t *testing.T) {
	srv := natstest.New(t)
	_, js := srv.Connect()
	clock := fakeclock.At(1_735_000_000_000)
	store, err := jsstore.New(js)
	require.NoError(t, err)
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(t, err)
	full, err := projection.NewIndex(views, store, projection.WithClock(clock))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = proj.Run(ctx) })
	wg.Go(func() { _ = full.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	c := &partitioned{t: t, srv: srv, clock: clock, svc: aggregate.NewService(store, aggregate.WithClock(clock)), full: full,
		instances: map[string]*member{}}

	processors := []string{"Billing", "Mailer", "Ledger", "Search", "Audit"}
	// create records n failures from from, of functions in context ctxName.
	// It may run beside the test's goroutine: it returns its error.
	createErr := func(ctxName string, from, n int) ([]string, error) {
		var ids []string
		for i := from; i < from+n; i++ {
			fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: ctxName, ProcessorName: processors[i%len(processors)], Name: "onOrder"}
			evt := fmt.Sprintf("evt-%05d", i)
			id := aggregate.RecordID(evt, fn)
			r, err := c.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
				EventID:     aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "shop", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
				Function:    fn,
				Error:       aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "boom"},
				ExecuteAt:   clock.Now().UnixMilli(),
				RetrySpec:   &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 60},
				Recoverable: aggregate.Recoverable,
			}, aggregate.Meta{Actor: "test"})
			if err != nil {
				return nil, err
			}
			if err := full.WaitFor(t.Context(), id, r.Version); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	create := func(ctxName string, from, n int) []string {
		ids, err := createErr(ctxName, from, n)
		require.NoError(t, err)
		return ids
	}
	first := create("shop", 0, 100)
	for _, name := range []string{"a", "b", "c"} {
		c.start(name)
	}
	testwait.For(t, "three instances serve every partition", c.served)
	qnc, _ := srv.Connect()
	q, err := fanout.NewQuerier(qnc, fanout.QuerierConfig{Plan: c.plan, Processors: full.Processors, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.True(t, c.neverShort(q), "every partition answers")

	// preparesAll ticks the live instances until every record of ids is
	// prepared, and checks each was sent once, by its partition's holder.
	preparesAll := func(ids []string) {
		clock.Set(clock.Now().Add(time.Minute))
		testwait.For(t, "every due record is prepared", func() bool {
			c.mu.Lock()
			for _, m := range c.instances {
				select {
				case m.ticks <- clock.Now():
				default:
				}
			}
			c.mu.Unlock()
			for _, id := range ids {
				if v, err := full.Get(t.Context(), id); err != nil || v.State.Status != aggregate.StatusPrepared {
					return false
				}
			}
			return true
		})
		for _, id := range ids {
			require.Equal(t, 1, preparedEvents(t, store, id), "record %s is prepared once", id)
		}
	}
	preparesAll(first)

	// Kills under command load: each round kills an instance and starts
	// another while records are created; every round's records are
	// prepared once, by the holders of their partitions.
	next := 100
	for round, victim := range []string{"c", "a", "d1"} {
		type batch struct {
			ids []string
			err error
		}
		created := make(chan batch, 1)
		from := next
		next += 60
		go func() {
			ids, err := createErr("load", from, 60)
			created <- batch{ids, err}
		}()
		c.kill(victim)
		c.start(fmt.Sprint("d", round+1))
		testwait.For(t, "the live instances serve every partition, no answer short meanwhile", func() bool {
			return c.neverShort(q) && c.served()
		})
		b := <-created
		require.NoError(t, b.err)
		preparesAll(b.ids)
	}
}
