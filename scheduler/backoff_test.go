package scheduler_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/scheduler"
)

// failingExec fails every command on the records in bad, as a record whose
// stored state the service cannot load would, and runs the others.
type failingExec struct {
	next scheduler.Executor
	bad  map[string]bool
}

func (f failingExec) Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error) {
	if f.bad[id] {
		return aggregate.Result{}, errors.New("load the record: corrupt state")
	}
	return f.next.Execute(ctx, id, c, meta)
}

// Regression: 120 records that cannot be prepared, older than a good one,
// came first in every pass's batch of 100, so the good record was never
// prepared, and every pass logged 100 WARN lines.
func TestSchedulerSkipsRecordsItCannotPrepare(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	versions := map[string]uint64{}
	bad := map[string]bool{}
	for i := range 120 {
		id, v := e.create(t, i, aggregate.Recoverable)
		versions[id], bad[id] = v, true
	}
	e.clock.Set(t0.Add(24 * time.Second))
	good, v := e.create(t, 1000, aggregate.Recoverable)
	versions[good] = v
	e.clock.Set(t0.Add(30 * time.Second)) // every record is due, the bad ones first
	e.indexed(t, versions)

	var logs testlog.Buffer
	ticks := make(chan time.Time)
	s := e.scheduler(t, failingExec{next: e.svc, bad: bad}, scheduler.WithTicks(ticks),
		scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), scheduler.WithFailureBackoff(time.Minute, 4*time.Minute))
	run(t, s)
	waitActive(t, s)
	for range 3 {
		tick(t, s, ticks)
	}
	st := s.Stats()
	assert.Equal(t, []string{"0@1735000025000 by scheduler"}, e.prepares(t, good), "the good record is prepared behind the bad ones: %+v", st)
	assert.Equal(t, uint64(1), st.Prepared)
	assert.Equal(t, uint64(120), st.Failed, "each bad record failed once, then backed off")
	assert.Equal(t, 120, st.BackingOff)
	assert.NotZero(t, st.Skipped)
	assert.LessOrEqual(t, logs.Count("prepare failed; backing off"), 10, "the failures' log lines are rate-limited")

	// After the first backoff (1 min) each bad record is tried once more,
	// then waits 2 min.
	e.clock.Set(t0.Add(30*time.Second + time.Minute))
	tick(t, s, ticks)
	tick(t, s, ticks)
	assert.Equal(t, uint64(240), s.Stats().Failed, "tried again once after the backoff")
	e.clock.Set(t0.Add(30*time.Second + 2*time.Minute))
	tick(t, s, ticks)
	assert.Equal(t, uint64(240), s.Stats().Failed, "the second backoff is longer")
	assert.Equal(t, 1, logs.Count("their log lines were left out"), "one summary line for the window's left-out failures")
}

func TestFailureBackoffOptionsAreChecked(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	for name, o := range map[string]scheduler.Option{
		"zero":     scheduler.WithFailureBackoff(0, time.Minute),
		"zero max": scheduler.WithFailureBackoff(time.Second, 0),
		"min>max":  scheduler.WithFailureBackoff(time.Hour, time.Minute),
	} {
		_, err := scheduler.New(e.index, e.svc, e.leases, o)
		assert.ErrorIs(t, err, scheduler.ErrInvalidOption, name)
	}
}
