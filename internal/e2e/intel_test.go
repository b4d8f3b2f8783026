package e2e_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/scheduler"
)

// declined is the failure of the charge function: one call site, a
// different order number each time.
func declined(order string) error { return crdb.Newf("card declined for order %s", order) }

// Failure intelligence end to end, on one injected clock: a failing
// function records failures with one fingerprint; a rule added after the
// fact marks the existing records by batch and the next one at record
// time; a hold-until-deploy rule keeps them from the scheduler; a new build
// registers and its canary succeeds, then the rest are released in steps;
// a later build whose canary fails halts its release and says so.
func TestFailureIntelligenceEndToEnd(t *testing.T) {
	ctx := t.Context()
	js := natstest.New(t).JetStream()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	clk := fakeclock.At(t0)

	views, err := projection.OpenViews(ctx, js)
	require.NoError(t, err)
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(t, err)
	index, err := projection.NewIndex(views, store, projection.WithClock(clk))
	require.NoError(t, err)
	records := aggregate.NewService(store, aggregate.WithClock(clk))
	ruleStore, err := rules.OpenStore(ctx, js, rules.WithClock(clk))
	require.NoError(t, err)
	watcher := ruleStore.Watcher(time.Hour, nil)
	builds, err := processor.OpenBuildRegistry(ctx, js, "", 0, 0)
	require.NoError(t, err)
	releases, err := scheduler.OpenParkReleases(ctx, js, "", 0)
	require.NoError(t, err)
	leases, err := scheduler.OpenLeases(ctx, js)
	require.NoError(t, err)
	var haltMu sync.Mutex
	var halted []scheduler.ParkRelease
	ticks := make(chan time.Time)
	// startScheduler starts a scheduler, as serve does; the returned
	// function stops it and waits for it.
	startScheduler := func() (*scheduler.Scheduler, func()) {
		s, err := scheduler.New(index, records, leases, scheduler.WithClock(clk), scheduler.WithTicks(ticks),
			scheduler.WithParkRules(watcher),
			scheduler.WithParkRelease(builds, index, releases, scheduler.ParkReleasePolicy{Canary: 1, Steps: []int{1, 0}, Threshold: 1},
				func(r scheduler.ParkRelease) { haltMu.Lock(); halted = append(halted, r); haltMu.Unlock() }))
		require.NoError(t, err)
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(sctx) }()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		return s, stop
	}
	run(t, proj.Run)
	run(t, index.Run)
	run(t, watcher.Run)
	sched, stopScheduler := startScheduler()
	<-watcher.Ready()

	rec, err := recorder.New(records, recorder.WithClock(clk), recorder.WithRules(watcher), recorder.WithModule("github.com/amends-dev/amends"))
	require.NoError(t, err)
	var failing atomic.Bool
	failing.Store(true)
	spec := aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 1, ExecutionTimeout: 10}
	charge := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Billing", Name: "charge"}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, cond, 30*time.Second, time.Millisecond, what)
	}
	stops := map[*processor.Processor]context.CancelFunc{} // each build's way to stop
	startBuild := func(version string) *processor.Processor {
		t.Helper()
		p, err := processor.New(js, store, "shop", processor.WithRecorder(rec), processor.WithRecords(records), processor.WithClock(clk),
			processor.WithImmediateRetry(processor.Retry{}), processor.WithBuildRegistry(builds, processor.Build{Version: version}))
		require.NoError(t, err)
		require.NoError(t, p.Register(processor.Function{Processor: "Billing", Name: "charge", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}},
			func(_ context.Context, d *processor.Delivery) error {
				if failing.Load() {
					return declined(d.Stream.Aggregate.ID)
				}
				return nil
			}, processor.RetrySpec(spec)))
		runCtx, stopRun := context.WithCancel(context.Background())
		require.NoError(t, p.Start(runCtx))
		t.Cleanup(func() { stopRun(); _ = p.Wait() })
		stops[p] = stopRun
		eventually("build "+version+" registers", func() bool {
			entries, err := builds.Builds(ctx)
			return err == nil && len(entries) == 1 && entries[0].Build.Version == version
		})
		return p
	}
	stopBuild := func(p *processor.Processor) {
		t.Helper()
		stops[p]()
		require.NoError(t, p.Wait())
	}
	place := func(order string) string {
		t.Helper()
		_, err := store.Append(ctx, eventstore.Stream{
			ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: order}, CreateTime: clk.Now().UnixMilli(),
			Events: []eventstore.Event{{ID: "evt-" + order, Name: "order_placed", Body: []byte(`{}`)}},
		}, 0)
		require.NoError(t, err)
		return aggregate.RecordID("evt-"+order, charge)
	}
	view := func(id string) api.View {
		t.Helper()
		var v api.View
		require.Eventually(t, func() bool {
			var err error
			v, err = index.Get(ctx, id)
			return err == nil
		}, 30*time.Second, time.Millisecond, "record %s in the index", id)
		return v
	}
	pass := func() {
		t.Helper()
		before := sched.Stats().Passes
		ticks <- clk.Now()
		eventually("a pass", func() bool { return sched.Stats().Passes > before })
	}
	status := func(id string) aggregate.Status {
		v, err := index.Get(ctx, id)
		if err != nil {
			return ""
		}
		return v.State.Status
	}

	v1 := startBuild("v1")
	eventually("the scheduler takes the lease", func() bool { return sched.Stats().Active })

	// 1. A failing function produces records with one fingerprint.
	var ids []string
	for i, o := range []string{"o-1", "o-2", "o-3"} {
		clk.SetMillis(t0 + int64(i)*10) // distinct failure times: the oldest is the canary
		ids = append(ids, place(o))
		view(ids[i])
	}
	fp := view(ids[0]).State.Error.Fingerprint
	require.NotEmpty(t, fp)
	for _, id := range ids {
		eventually("record "+id, func() bool { return view(id).State.Error.Fingerprint == fp })
		assert.Equal(t, aggregate.RecoverabilityUnknown, view(id).State.Recoverable)
	}
	// Get reads the views bucket; the summary reads the in-memory index,
	// which may be a moment behind it.
	var groups []api.FingerprintGroup
	eventually("the index holds the three records", func() bool {
		var err error
		groups, err = index.FingerprintSummary(api.Filter{})
		require.NoError(t, err)
		return len(groups) == 1 && groups[0].Total == 3
	})
	require.Len(t, groups, 1, "one failure, one group")
	assert.Equal(t, 3, groups[0].Total)
	assert.Contains(t, groups[0].SampleMessage, "card declined for order o-")

	// 2. A rule added after the fact marks the existing records by batch
	// and a new failure at record time.
	mark, err := ruleStore.Add(ctx, api.Rule{Match: api.RuleMatch{Fingerprint: fp}, Action: rules.MarkRecoverable, Reason: "declines clear up", Actor: "alice"})
	require.NoError(t, err)
	eventually("the recorder's watcher sees the rule", func() bool { return watcher.Set().Len() == 1 })
	dry, err := ruleStore.Apply(ctx, mark.ID, index, records, rules.ApplyOptions{DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{api.OutcomeWould: 3}, dry.Counts, "a dry run changes nothing")
	res, err := ruleStore.Apply(ctx, mark.ID, index, records, rules.ApplyOptions{RequestID: "mark-1", Actor: "alice", RatePerSecond: api.MaxBatchRate})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{api.OutcomeApplied: 3}, res.Counts)
	for _, id := range ids {
		eventually("marked by the batch", func() bool { return view(id).State.Recoverable == aggregate.Recoverable })
	}
	clk.SetMillis(t0 + 30)
	ids = append(ids, place("o-4"))
	eventually("marked at record time", func() bool { return view(ids[3]).State.Recoverable == aggregate.Recoverable })
	assert.Equal(t, fp, view(ids[3]).State.Error.Fingerprint)

	// 3. A hold-until-deploy rule keeps them, and a later failure too.
	_, err = ruleStore.Add(ctx, api.Rule{Match: api.RuleMatch{Fingerprint: fp}, Action: rules.ParkUntilDeploy, Reason: "fix in review", Actor: "alice"})
	require.NoError(t, err)
	eventually("the hold is watched", func() bool { return watcher.Set().Len() == 2 })
	clk.SetMillis(t0 + 60_000)
	ids = append(ids, place("o-5"))
	view(ids[4])
	clk.SetMillis(t0 + 70_000) // every record is due by its retry spec
	pass()
	pass()
	st := sched.Stats()
	assert.Zero(t, st.Prepared, "held records are not prepared")
	assert.Equal(t, 5, st.Held, "the pass held every due record")
	for _, id := range ids {
		assert.Equal(t, aggregate.StatusFailed, status(id))
	}
	rel, ok, err := releases.Get(ctx, "shop", "Billing")
	require.NoError(t, err)
	require.True(t, ok, "the running build is recorded")
	assert.Equal(t, scheduler.PhaseBaseline, rel.Phase)

	// 4. A new build registers: the canary succeeds, then the rest are
	// released in steps (1, then all).
	failing.Store(false)
	stopBuild(v1)
	clk.SetMillis(t0 + 120_000)
	v2 := startBuild("v2")
	released := func() int {
		n := 0
		for _, id := range ids {
			if status(id) == aggregate.StatusSucceeded {
				n++
			}
		}
		return n
	}
	pass() // starts the release and prepares the canary
	rel, _, err = releases.Get(ctx, "shop", "Billing")
	require.NoError(t, err)
	assert.Equal(t, scheduler.PhaseCanary, rel.Phase)
	require.Len(t, rel.Batch, 1)
	assert.Equal(t, ids[0], rel.Batch[0].ID, "the oldest failure is the canary")
	eventually("the canary succeeds", func() bool { return released() == 1 })
	// serve restarts: a new scheduler picks the release up from its
	// progress in KV.
	stopScheduler()
	sched, _ = startScheduler()
	eventually("the new scheduler takes the lease", func() bool { return sched.Stats().Active })
	seen := []int{1}
	for i := 0; i < 20 && rel.Phase != scheduler.PhaseDone; i++ {
		pass()
		eventually("the step settles", func() bool {
			r, _, err := releases.Get(ctx, "shop", "Billing")
			if err != nil {
				return false
			}
			rel = r
			for _, b := range r.Batch {
				if status(b.ID) != aggregate.StatusSucceeded {
					return false
				}
			}
			return true
		})
		if n := released(); n != seen[len(seen)-1] {
			seen = append(seen, n)
		}
	}
	require.Equal(t, scheduler.PhaseDone, rel.Phase, "the release finished: %+v", rel)
	assert.Equal(t, []int{1, 2, 5}, seen, "canary, a step of 1, then the rest")
	assert.Equal(t, 5, rel.Succeeded)
	assert.Zero(t, sched.Stats().ParkReleases.Started, "the restarted scheduler continued the release rather than starting one")
	assert.Zero(t, sched.Stats().ParkReleases.Halted)

	// 5. A later build whose canary fails halts its release and says so;
	// the other held records stay held.
	failing.Store(true)
	late := []string{place("o-6"), place("o-7")}
	view(late[0])
	view(late[1])
	stopBuild(v2)
	clk.SetMillis(t0 + 180_000)
	startBuild("v3")
	pass() // starts the release, canary o-6
	eventually("the canary fails and the release halts", func() bool {
		pass()
		r, _, err := releases.Get(ctx, "shop", "Billing")
		return err == nil && r.Phase == scheduler.PhaseHalted
	})
	rel, _, err = releases.Get(ctx, "shop", "Billing")
	require.NoError(t, err)
	assert.Equal(t, processor.Build{Version: "v3"}, rel.Build)
	assert.Contains(t, rel.Halt, "the canary of build v3 succeeded for 0 of 1 records")
	assert.EqualValues(t, 1, sched.Stats().ParkReleases.Halted, "the halt is counted")
	haltMu.Lock()
	require.Len(t, halted, 1, "the halt is handed to the notifier hook")
	haltMu.Unlock()
	eventually("the failed canary is marked in its history", func() bool { return view(late[0]).State.Recoverable == aggregate.Unrecoverable })
	history, err := index.History(ctx, late[0])
	require.NoError(t, err)
	assert.Contains(t, history[0].Stream.Headers[aggregate.HeaderReason], "release halted: the canary of build v3", "the record's history says why")
	assert.Equal(t, aggregate.StatusFailed, status(late[1]))
	assert.Equal(t, int32(0), view(late[1]).State.RetryState.Retries, "the rest stay held")
	pass()
	assert.Equal(t, int32(0), view(late[1]).State.RetryState.Retries, "a halted release prepares nothing more")
}
