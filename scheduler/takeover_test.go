package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/scheduler"
)

// Two schedulers on a three-node cluster, each with its own connection.
// The active one is killed mid-run (its connection closes: it can neither
// renew nor release the lease). It stops preparing before the lease
// expires; the other takes over within one TTL of the kill and prepares
// the rest. The store shows every record prepared exactly once for its due
// time.
func TestTakeoverAfterTheActiveSchedulerDies(t *testing.T) {
	const ttl = 2 * time.Second
	c := natstest.NewCluster(t, 3)
	_, js := c.Connect()
	e := newEnv(t, js, 3, ttl)
	const records = 150
	versions := map[string]uint64{}
	for i := range records {
		id, v := e.create(t, i, aggregate.Recoverable)
		versions[id] = v
	}
	e.clock.Set(t0.Add(time.Minute))
	e.indexed(t, versions)

	// Each instance sends its commands and holds its lease on its own
	// connection.
	instance := func(name string, ticks chan time.Time) (*scheduler.Scheduler, func()) {
		nc, js := c.Connect()
		st, err := jsstore.New(js, jsstore.WithReplicas(3))
		require.NoError(t, err)
		svc := aggregate.NewService(st, aggregate.WithClock(e.clock))
		leases, err := scheduler.OpenLeases(t.Context(), js, scheduler.WithLeaseTTL(ttl), scheduler.WithLeaseReplicas(3))
		require.NoError(t, err)
		s, err := scheduler.New(e.index, svc, leases, scheduler.WithClock(e.clock), scheduler.WithTicks(ticks), scheduler.WithInstance(name),
			scheduler.WithConcurrency(1), scheduler.WithBatch(records), scheduler.WithRenewal(500*time.Millisecond, 400*time.Millisecond))
		require.NoError(t, err)
		run(t, s)
		return s, nc.Close
	}
	ticksA := make(chan time.Time, 1)
	a, killA := instance("a", ticksA)
	waitActive(t, a)
	ticksB := make(chan time.Time, 1)
	b, _ := instance("b", ticksB)

	ticksA <- time.Time{}
	require.Eventually(t, func() bool { return a.Stats().Prepared >= 20 }, 20*time.Second, time.Millisecond, "a is mid-run")
	killed := time.Now()
	killA()

	// Watch both: a must stop holding before b starts.
	var aStopped, bStarted time.Duration
	require.Eventually(t, func() bool {
		if aStopped == 0 && !a.Stats().Active {
			aStopped = time.Since(killed)
		}
		if bStarted == 0 && b.Stats().Active {
			bStarted = time.Since(killed)
		}
		return aStopped > 0 && bStarted > 0
	}, 2*ttl, time.Millisecond, "a steps down (%s) and b takes over (%s)", &aStopped, &bStarted)
	t.Logf("after the kill: a stopped holding after %s, b took over after %s (TTL %s)", aStopped, bStarted, ttl)
	assert.Less(t, aStopped, bStarted, "a stops before b starts")
	assert.LessOrEqual(t, bStarted, ttl+200*time.Millisecond, "b takes over within the TTL (plus the server's expiry latency)")

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
	}, 30*time.Second, 10*time.Millisecond, "b prepares the rest")
	byA := a.Stats().Prepared
	t.Logf("a prepared %d before it died, b %d (b's duplicates and rejections: %d, %d)", byA, b.Stats().Prepared, b.Stats().Duplicates, b.Stats().Rejected)
	for id := range versions {
		assert.Equal(t, []string{"0@1735000001000 by scheduler"}, e.prepares(t, id), "record %s prepared once for its due time", id)
	}
	assert.Positive(t, b.Stats().Prepared)
	assert.Less(t, byA, uint64(records), "a was killed mid-run")
}
