package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/scheduler"
)

// createCode records a failure with error code code.
func (e *env) createCode(tb testing.TB, i int, code string) (string, uint64) {
	tb.Helper()
	evt := fmt.Sprintf("evt-%05d", i)
	id := aggregate.RecordID(evt, fn)
	r, err := e.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
		Function:  fn,
		Error:     aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "boom"},
		ExecuteAt: e.clock.Now().UnixMilli(),
		RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 60},
	}, aggregate.Meta{Actor: "test"})
	require.NoError(tb, err)
	return id, r.Version
}

// Held records stay due but unprepared, and many of them ahead in the due
// order do not keep the others from being prepared in the same pass.
func TestHeldRecordsAreLeftAloneAndDoNotBlockOthers(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	versions := map[string]uint64{}
	var held, free []string
	for i := range 6 {
		id, v := e.createCode(t, i, "Held")
		versions[id], held = v, append(held, id)
	}
	e.clock.Set(t0.Add(time.Millisecond)) // later in the due order
	for i := 6; i < 8; i++ {
		id, v := e.createCode(t, i, "Timeout")
		versions[id], free = v, append(free, id)
	}
	e.indexed(t, versions)
	e.clock.Set(t0.Add(10 * time.Second))

	hold := rules.NewSet([]api.Rule{{ID: "r-000000000001", Action: rules.ParkUntilDeploy,
		Match: api.RuleMatch{FunctionContext: fn.ContextName, Processor: fn.ProcessorName, Function: fn.Name, ErrorCode: "Held"}}})
	ticks := make(chan time.Time)
	s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithBatch(2), scheduler.WithParkRules(scheduler.StaticRules{Rules: hold}))
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	st := s.Stats()
	assert.Equal(t, uint64(2), st.Prepared, "the two free records, past six held ones, in the first pass: %+v", st)
	assert.Equal(t, 6, st.Held)
	for _, id := range held {
		assert.Empty(t, e.prepares(t, id), "held")
	}
	for _, id := range free {
		assert.Len(t, e.prepares(t, id), 1, "prepared")
	}
}

func TestDeployReleaseOptions(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	rel, err := scheduler.OpenParkReleases(t.Context(), e.js, "", 0)
	require.NoError(t, err)
	builds := staticBuilds{}
	for _, c := range []struct {
		policy scheduler.ParkReleasePolicy
		msg    string
	}{
		{scheduler.ParkReleasePolicy{Canary: -1}, "release canary must be between 1 and 500 records, got -1"},
		{scheduler.ParkReleasePolicy{Threshold: 1.5}, "release threshold must be a fraction above 0 and at most 1, got 1.5"},
		{scheduler.ParkReleasePolicy{Steps: []int{5, -1}}, "release steps must be 0 (all the rest) or positive, got -1"},
	} {
		_, err := scheduler.New(e.index, e.svc, e.leases, scheduler.WithParkRelease(builds, e.index, rel, c.policy, nil))
		require.ErrorIs(t, err, scheduler.ErrInvalidOption)
		assert.Contains(t, err.Error(), c.msg)
	}
	_, err = scheduler.New(e.index, e.svc, e.leases, scheduler.WithParkRelease(nil, e.index, rel, scheduler.ParkReleasePolicy{}, nil))
	require.ErrorIs(t, err, scheduler.ErrInvalidOption)
	_, err = scheduler.New(e.index, e.svc, e.leases, scheduler.WithParkRules(nil))
	require.ErrorIs(t, err, scheduler.ErrInvalidOption)
}

type staticBuilds []processor.BuildEntry

func (b staticBuilds) Builds(context.Context) ([]processor.BuildEntry, error) { return b, nil }

// mutableBuilds is a BuildSource whose entries a test changes.
type mutableBuilds struct {
	mu      sync.Mutex
	entries []processor.BuildEntry
}

func (b *mutableBuilds) set(e ...processor.BuildEntry) { b.mu.Lock(); b.entries = e; b.mu.Unlock() }
func (b *mutableBuilds) Builds(context.Context) ([]processor.BuildEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.entries), nil
}

// A new build of a processor that no hold rule can concern is noted
// without a release.
func TestNewBuildWithoutHoldsIsNotedQuietly(t *testing.T) {
	e := newEnv(t, natstest.New(t).JetStream(), 1, steadyTTL)
	rel, err := scheduler.OpenParkReleases(t.Context(), e.js, "", 0)
	require.NoError(t, err)
	builds := &mutableBuilds{}
	builds.set(processor.BuildEntry{Context: "order", Processor: "P", Instance: "a", Build: processor.Build{Version: "v1"}, StartedAt: 1})
	ticks := make(chan time.Time)
	s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithParkRules(scheduler.StaticRules{Rules: rules.NewSet(nil)}),
		scheduler.WithParkRelease(builds, e.index, rel, scheduler.ParkReleasePolicy{}, nil))
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	r, ok, err := rel.Get(t.Context(), "order", "P")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, scheduler.PhaseBaseline, r.Phase, "the first build seen is the baseline")
	builds.set(processor.BuildEntry{Context: "order", Processor: "P", Instance: "b", Build: processor.Build{Version: "v2"}, StartedAt: 2})
	tick(t, s, ticks)
	r, _, err = rel.Get(t.Context(), "order", "P")
	require.NoError(t, err)
	assert.Equal(t, scheduler.PhaseDone, r.Phase)
	assert.Equal(t, processor.Build{Version: "v2"}, r.Build)
	assert.Equal(t, processor.Build{Version: "v1"}, r.PreviousBuild)
	assert.Zero(t, s.Stats().ParkReleases.Started, "no release without holds")
}
