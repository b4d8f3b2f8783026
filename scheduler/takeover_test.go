package scheduler_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/scheduler"
)

// dyingExecutor sends commands until the n-th, before which it kills the
// instance's connection: the process dies in the middle of a pass.
type dyingExecutor struct {
	scheduler.Executor
	n      int64
	kill   func()
	calls  atomic.Int64
	once   sync.Once
	killed chan struct{}
}

func (d *dyingExecutor) Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error) {
	if d.calls.Add(1) >= d.n {
		d.once.Do(func() {
			d.kill()
			close(d.killed)
		})
	}
	return d.Executor.Execute(ctx, id, c, meta)
}

// Two schedulers on a three-node cluster, each with its own connection.
// The active one dies in the middle of a pass (its connection closes: it
// can neither renew nor release the lease). It steps down when its
// validity ends; the other is granted the lease only after the key
// expired, so after that validity, and prepares the rest. The store shows
// every record prepared exactly once for its due time. Nothing here
// depends on how fast the machine is: the order is the lease's.
func TestTakeoverAfterTheActiveSchedulerDies(t *testing.T) {
	const (
		// The TTL leaves a renewal 3.5 s of slack (TTL - renewal - margin),
		// so a busy machine never costs a the lease before it dies.
		ttl     = 5 * time.Second
		records = 150
		dieAt   = 20 // a dies before sending its 20th prepare
	)
	c := natstest.NewCluster(t, 3)
	_, js := c.Connect()
	e := newEnv(t, js, 3, ttl)
	versions := map[string]uint64{}
	for i := range records {
		id, v := e.create(t, i, aggregate.Recoverable)
		versions[id] = v
	}
	e.clock.Set(t0.Add(time.Minute))
	e.indexed(t, versions)

	// Each instance sends its commands and holds its lease on its own
	// connection.
	instance := func(name string, ticks chan time.Time, wrap func(scheduler.Executor, func()) scheduler.Executor) *scheduler.Scheduler {
		nc, js := c.Connect()
		st, err := jsstore.New(js, jsstore.WithReplicas(3))
		require.NoError(t, err)
		svc := aggregate.NewService(st, aggregate.WithClock(e.clock))
		leases, err := scheduler.OpenLeases(t.Context(), js, scheduler.WithLeaseTTL(ttl), scheduler.WithLeaseReplicas(3))
		require.NoError(t, err)
		s, err := scheduler.New(e.index, wrap(svc, nc.Close), leases, scheduler.WithClock(e.clock), scheduler.WithTicks(ticks), scheduler.WithInstance(name),
			scheduler.WithConcurrency(1), scheduler.WithBatch(records), scheduler.WithRenewal(500*time.Millisecond, time.Second))
		require.NoError(t, err)
		run(t, s)
		return s
	}
	dying := &dyingExecutor{n: dieAt, killed: make(chan struct{})}
	ticksA := make(chan time.Time, 1)
	a := instance("a", ticksA, func(x scheduler.Executor, kill func()) scheduler.Executor {
		dying.Executor, dying.kill = x, kill
		return dying
	})
	waitActive(t, a)
	ticksB := make(chan time.Time, 1)
	b := instance("b", ticksB, func(x scheduler.Executor, _ func()) scheduler.Executor { return x })

	ticksA <- time.Time{}
	select {
	case <-dying.killed:
	case <-time.After(60 * time.Second):
		t.Fatal("a never reached its 20th prepare")
	}

	require.Eventually(t, func() bool { return !a.Stats().Active }, 60*time.Second, time.Millisecond, "a steps down when its validity ends")
	require.Eventually(t, func() bool { return b.Stats().Active }, 60*time.Second, time.Millisecond, "b takes over once the key expired")
	sa, sb := a.Stats(), b.Stats()
	t.Logf("a valid until %s, b active since %s (TTL %s)", sa.ValidUntil.Format(time.StampMilli), sb.ActiveSince.Format(time.StampMilli), ttl)
	assert.True(t, sa.ValidUntil.Before(sb.ActiveSince), "a's validity ended (%s) before b was granted the lease (%s)", sa.ValidUntil, sb.ActiveSince)
	assert.Equal(t, uint64(1), sb.Acquired, "b was granted the lease once")
	assert.Equal(t, uint64(1), sa.Lost, "a stepped down once")

	require.Eventually(t, func() bool {
		select {
		case ticksB <- time.Time{}:
		default:
		}
		n := 0
		for id := range versions {
			if len(e.prepares(t, id)) > 0 {
				n++
			}
		}
		return n == records
	}, 60*time.Second, 10*time.Millisecond, "b prepares the rest")
	// b counts a prepare once it is stored: the count may trail the store.
	require.Eventually(t, func() bool { return b.Stats().Prepared >= records-(dieAt-1) }, 30*time.Second, time.Millisecond, "b counted its prepares")
	byA := a.Stats().Prepared
	t.Logf("a prepared %d before it died, b %d (b's duplicates and rejections: %d, %d)", byA, b.Stats().Prepared, b.Stats().Duplicates, b.Stats().Rejected)
	for id := range versions {
		assert.Equal(t, []string{"0@1735000001000 by scheduler"}, e.prepares(t, id), "record %s prepared once for its due time", id)
	}
	assert.Equal(t, uint64(dieAt-1), byA, "a prepared until it died")
	assert.Equal(t, uint64(records-(dieAt-1)), b.Stats().Prepared, "b prepared the rest, none twice")
}
