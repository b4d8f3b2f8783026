package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/scheduler"
)

func waitActive(t *testing.T, s *scheduler.Scheduler) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Stats().Active }, 30*time.Second, time.Millisecond, "the scheduler takes the lease")
}

// tick sends one tick and waits until the pass it starts has finished.
func tick(t *testing.T, s *scheduler.Scheduler, ticks chan<- time.Time) {
	t.Helper()
	before := s.Stats()
	ticks <- time.Time{}
	require.Eventually(t, func() bool {
		st := s.Stats()
		return st.Passes+st.Idle > before.Passes+before.Idle
	}, 30*time.Second, time.Millisecond, "the pass ends")
}

func TestSchedulerPreparesWhatIsDue(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	versions := map[string]uint64{}
	var due, unrecoverable, succeeded []string
	for i := range 10 {
		id, v := e.create(t, i, aggregate.Recoverable)
		versions[id] = v
		due = append(due, id)
	}
	for i := 10; i < 13; i++ {
		id, v := e.create(t, i, aggregate.Unrecoverable)
		versions[id] = v
		unrecoverable = append(unrecoverable, id)
	}
	for i := 13; i < 15; i++ {
		id, _ := e.create(t, i, aggregate.RecoverabilityUnknown)
		_, err := e.svc.Execute(t.Context(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{})
		require.NoError(t, err)
		r, err := e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0.UnixMilli()}, aggregate.Meta{})
		require.NoError(t, err)
		versions[id] = r.Version
		succeeded = append(succeeded, id)
	}
	e.clock.Set(t0.Add(2 * time.Second)) // nextRetryAt is t0+1 s for the new records
	late, v := e.create(t, 15, aggregate.Recoverable)
	versions[late] = v // due at t0+3 s
	e.indexed(t, versions)

	ticks := make(chan time.Time)
	s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithConcurrency(3))
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	assert.Equal(t, uint64(len(due)), s.Stats().Prepared, "%+v", s.Stats())
	for _, id := range due {
		assert.Equal(t, []string{"0@1735000001000 by scheduler"}, e.prepares(t, id), "prepared once, as the scheduler")
	}
	for _, id := range append(append(unrecoverable, late), succeeded...) {
		assert.Empty(t, e.prepares(t, id)[min(len(e.prepares(t, id)), 1):], "not prepared by the scheduler")
	}
	assert.Empty(t, e.prepares(t, late))

	// The next pass, before the index has seen the prepares, sends the same
	// due times again: they are duplicates or rejections, never a second
	// prepare.
	tick(t, s, ticks)
	st := s.Stats()
	assert.Equal(t, uint64(len(due)), st.Prepared, "%+v", st)
	for _, id := range due {
		assert.Len(t, e.prepares(t, id), 1)
	}
	assert.Zero(t, st.Failed)
}

// staticDue lists fixed records, as an index that has not seen their
// latest commands would.
type staticDue []index.Due

func (s staticDue) Due(time.Time, int) []index.Due { return s }

func TestSchedulerCountsRecordsThatMovedOn(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	id, _ := e.create(t, 1, aggregate.Recoverable)
	_, err := e.svc.Execute(t.Context(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	_, err = e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0.UnixMilli()}, aggregate.Meta{})
	require.NoError(t, err)

	ticks := make(chan time.Time)
	s, err := scheduler.New(staticDue{{ID: id, Version: 1, NextRetryAt: t0.UnixMilli() + 1000}, {ID: "gone", Version: 1}}, e.svc, e.leases,
		scheduler.WithTicks(ticks), scheduler.WithClock(e.clock))
	require.NoError(t, err)
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	st := s.Stats()
	assert.Equal(t, uint64(1), st.Rejected, "a succeeded record is a rejection: %+v", st)
	assert.Equal(t, uint64(1), st.Missing, "a record that does not exist is missing (its view is wrong): %+v", st)
	assert.Equal(t, 1, st.BackingOff, "the missing record backs off, so it cannot take a pass's batch")
	assert.Zero(t, st.Failed+st.Prepared)
}

// steadyTTL is the lease TTL of tests about what the holder does: far
// longer than any test, so a busy machine's late renewal never costs the
// lease in the middle of one.
const steadyTTL = 5 * time.Minute

// The lease's TTL is far longer than the test may take: b can only be
// active because a released the lease when it stopped.
func TestOneActiveSchedulerAndCleanHandOver(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	ticksA, ticksB := make(chan time.Time), make(chan time.Time)
	a := e.scheduler(t, e.svc, scheduler.WithTicks(ticksA), scheduler.WithInstance("a"))
	stopA := run(t, a)
	waitActive(t, a)
	b := e.scheduler(t, e.svc, scheduler.WithTicks(ticksB), scheduler.WithInstance("b"))
	run(t, b)
	tick(t, b, ticksB)
	assert.False(t, b.Stats().Active, "b waits while a holds the lease")
	assert.Equal(t, uint64(1), b.Stats().Idle, "b's tick does nothing")

	stopA()
	require.False(t, a.Stats().Active, "a stepped down when it stopped")
	waitActive(t, b) // within 30 s, far less than the TTL: a released the lease
	sa, sb := a.Stats(), b.Stats()
	assert.True(t, sb.ActiveSince.Before(sa.ValidUntil), "b took over before a's lease could have expired (%s, %s)", sb.ActiveSince, sa.ValidUntil)
	assert.Equal(t, uint64(1), sb.Acquired)
}

func TestSchedulerRunsOnItsPeriod(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	s := e.scheduler(t, e.svc, scheduler.WithInitialDelay(0), scheduler.WithPeriod(20*time.Millisecond))
	run(t, s)
	require.Eventually(t, func() bool { return s.Stats().Passes >= 2 }, 30*time.Second, time.Millisecond)
}

func TestOptionsAreChecked(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, 3*time.Second)
	for name, o := range map[string]scheduler.Option{
		"period":      scheduler.WithPeriod(0),
		"delay":       scheduler.WithInitialDelay(-1),
		"batch":       scheduler.WithBatch(0),
		"rate":        scheduler.WithRate(0),
		"concurrency": scheduler.WithConcurrency(0),
		"clock":       scheduler.WithClock(nil),
		"renewal":     scheduler.WithRenewal(2*time.Second, time.Second),
		"key":         scheduler.WithLeaseKey(""),
	} {
		_, err := scheduler.New(e.index, e.svc, e.leases, o)
		assert.ErrorIs(t, err, scheduler.ErrInvalidOption, name)
	}
	_, err := scheduler.OpenLeases(context.Background(), e.js, scheduler.WithLeaseTTL(4*time.Second))
	assert.ErrorIs(t, err, scheduler.ErrIncompatibleBucket, "another TTL on the same bucket")
}

// More due than a batch: one pass prepares batch after batch, at its
// rate, until none is left, each record once; Wow's one batch a period
// would leave 250 of these 350 records for the next passes, and at 15
// failures a second the backlog would only grow.
func TestAPassCatchesUpBatchAfterBatch(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	versions := map[string]uint64{}
	var ids []string
	for i := range 350 {
		id, v := e.create(t, i, aggregate.Recoverable)
		versions[id] = v
		ids = append(ids, id)
	}
	e.clock.Set(t0.Add(2 * time.Second))
	e.indexed(t, versions)
	ticks := make(chan time.Time)
	s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithBatch(100), scheduler.WithRate(100000))
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	st := s.Stats()
	assert.Equal(t, uint64(350), st.Prepared, "one pass: %+v", st)
	assert.Equal(t, uint64(1), st.Passes)
	for _, id := range ids {
		assert.Len(t, e.prepares(t, id), 1, "%s prepared once", id)
	}
}

// A batch that prepares nothing new (the index still lists records that
// moved on) ends the pass: it does not spin on them.
func TestAPassStopsWhenABatchPreparesNothing(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	var stale staticDue
	for i := range 3 {
		id, _ := e.create(t, i, aggregate.Recoverable)
		_, err := e.svc.Execute(t.Context(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{})
		require.NoError(t, err)
		stale = append(stale, index.Due{ID: id, Version: 1, NextRetryAt: t0.UnixMilli() + 1000})
	}
	ticks := make(chan time.Time)
	s, err := scheduler.New(stale, e.svc, e.leases, scheduler.WithTicks(ticks), scheduler.WithClock(e.clock), scheduler.WithBatch(3))
	require.NoError(t, err)
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	st := s.Stats()
	assert.Equal(t, uint64(3), st.Rejected, "one batch, then the pass ends: %+v", st)
}
