package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/rollout"
	"github.com/amends-dev/amends/scheduler"
)

const waitFor, poll = 30 * time.Second, 5 * time.Millisecond

var fnCircuit = circuit.Of(fn)

// drainEnv is a control plane with circuits and drains, and a replayer
// that plays the processor: it answers every prepared record of fn,
// succeeding while healthy says so.
type drainEnv struct {
	*env
	circuits *circuit.Store
	watcher  *circuit.Watcher
	source   scheduler.CircuitSource // the drain's circuits: the watcher unless set
	drains   *circuit.Drains
	ticks    chan time.Time // drain ticks
	passes   chan time.Time // pass ticks
	healthy  atomic.Bool
	bad      sync.Map     // ids of records whose replays always fail, healthy or not
	paused   atomic.Bool  // no replay while set
	idle     atomic.Int64 // the replayer's rounds spent paused
	replays  atomic.Int64
}

func newDrainEnv(t *testing.T) *drainEnv {
	t.Helper()
	js := natstest.New(t).JetStream()
	e := &drainEnv{env: newEnv(t, js, 1, 10*time.Second), ticks: make(chan time.Time), passes: make(chan time.Time)}
	var err error
	e.circuits, err = circuit.OpenStore(t.Context(), js, circuit.WithClock(e.clock))
	require.NoError(t, err)
	e.watcher = e.circuits.Watcher("", quietLog(), nil)
	run(t, e.watcher)
	<-e.watcher.Ready()
	e.drains, err = circuit.OpenDrains(t.Context(), js, "", 1)
	require.NoError(t, err)
	e.healthy.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.replay(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return e
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (e *drainEnv) start(t *testing.T, policy scheduler.DrainPolicy) (*scheduler.Scheduler, func()) {
	t.Helper()
	var source scheduler.CircuitSource = e.watcher
	if e.source != nil {
		source = e.source
	}
	s := e.scheduler(t, e.svc, scheduler.WithTicks(e.passes), scheduler.WithLogger(quietLog()),
		scheduler.WithDrains(scheduler.DrainConfig{Circuits: source, Store: e.circuits, Records: e.index, Progress: e.drains,
			Policy: policy, Ticks: e.ticks, CircuitPolicy: circuit.Policy{CoolDown: 10 * time.Second}}))
	stop := run(t, s)
	require.Eventually(t, func() bool { return s.Stats().Active }, waitFor, poll, "the scheduler holds its lease")
	return s, stop
}

// replay applies the outcome of every prepared record of fn, as a replay
// consumer would.
func (e *drainEnv) replay(ctx context.Context) {
	for ctx.Err() == nil {
		if e.paused.Load() {
			e.idle.Add(1)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
			continue
		}
		page, err := e.index.List(api.Query{Filter: api.Filter{Status: aggregate.StatusPrepared}, Limit: api.MaxLimit})
		if err == nil {
			for _, it := range page.Items {
				var c aggregate.Command = aggregate.ApplyExecutionSuccess{ExecuteAt: e.clock.Now().UnixMilli(), Attempt: it.Retries}
				if _, bad := e.bad.Load(it.ID); bad || !e.healthy.Load() {
					c = aggregate.ApplyExecutionFailed{ExecuteAt: e.clock.Now().UnixMilli(), Attempt: it.Retries, Recoverable: aggregate.Recoverable,
						Error: aggregate.ErrorDetails{ErrorCode: "Unavailable", ErrorMsg: "still down"}}
				}
				if _, err := e.svc.Execute(ctx, it.ID, c, aggregate.Meta{Actor: "replayer"}); err == nil {
					e.replays.Add(1)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// pause holds the replays and returns once no replay the replayer began
// before is still under way (it has spent a round paused since): a batch
// the drain prepares next stays prepared until resume.
func (e *drainEnv) pause(t *testing.T) {
	t.Helper()
	e.paused.Store(true)
	seen := e.idle.Load()
	require.Eventually(t, func() bool { return e.idle.Load() > seen }, waitFor, time.Millisecond, "the replayer pauses")
}

// replayBatch lets the replayer answer the records of batch and pauses it
// again once they have all succeeded.
func (e *drainEnv) replayBatch(t *testing.T, batch []rollout.Record) {
	t.Helper()
	e.paused.Store(false)
	for _, r := range batch {
		require.Eventually(t, func() bool { return e.status(t, r.ID).Status == aggregate.StatusSucceeded }, waitFor, poll, "%s replayed", r.ID)
	}
	e.pause(t)
}

// records creates n records of fn failed at the clock's time with code,
// not due for an hour, and waits until the index has them.
func (e *drainEnv) records(t *testing.T, from, n int, code string) []string {
	t.Helper()
	var ids []string
	versions := map[string]uint64{}
	for i := from; i < from+n; i++ {
		evt := fmt.Sprintf("evt-%05d", i)
		id := aggregate.RecordID(evt, fn)
		r, err := e.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:     aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
			Function:    fn,
			Error:       aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "smtp 451"},
			ExecuteAt:   e.clock.Now().UnixMilli(),
			RetrySpec:   &aggregate.RetrySpec{MaxRetries: 10, MinBackoff: 3600, ExecutionTimeout: 60},
			Recoverable: aggregate.Recoverable,
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		ids = append(ids, id)
		versions[id] = r.Version
	}
	e.indexed(t, versions)
	return ids
}

func (e *drainEnv) setCircuit(t *testing.T, change func(circuit.State) (circuit.State, bool)) circuit.State {
	t.Helper()
	st, rev, _, err := e.circuits.Update(t.Context(), fnCircuit, change)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, c := range e.watcher.List() {
			if c.Function == fnCircuit && c.UpdatedAt == st.UpdatedAt && c.Phase == st.Phase {
				return true
			}
		}
		return false
	}, waitFor, poll, "the watcher has revision %d", rev)
	return st
}

func (e *drainEnv) tick(t *testing.T) {
	t.Helper()
	select {
	case e.ticks <- e.clock.Now():
	case <-time.After(waitFor):
		t.Fatal("the drain loop does not take ticks")
	}
}

func (e *drainEnv) drain(t *testing.T) circuit.Drain {
	t.Helper()
	d, ok, err := e.drains.Get(t.Context(), fnCircuit)
	require.NoError(t, err)
	require.True(t, ok, "a drain is stored")
	return d
}

// tickUntil ticks the drains, 10 ms apart on the clock, until cond holds.
func (e *drainEnv) tickUntil(t *testing.T, what string, cond func(circuit.Drain) bool) circuit.Drain {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		e.clock.Set(e.clock.Now().Add(10 * time.Millisecond))
		e.tick(t)
		if d, ok, err := e.drains.Get(t.Context(), fnCircuit); err == nil && ok && cond(d) {
			return d
		}
		time.Sleep(poll) // let the replayer and the index move between ticks
	}
	t.Fatalf("%s: not within %s; drain %+v", what, waitFor, e.drain(t))
	return circuit.Drain{}
}

func (e *drainEnv) status(t *testing.T, id string) aggregate.State {
	t.Helper()
	s, _, err := e.svc.Get(t.Context(), id)
	require.NoError(t, err)
	return s
}

var opened = circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Instance: "i1",
	Last: circuit.Failure{Code: "Unavailable", Message: "smtp 451"}}

// Given records of an outage (CircuitOpen ones and real failures within
// it) and others from before it, when the circuit is open the passes leave
// them alone and the drain waits; after the cool-down, with no live call,
// the drain claims the probe for the oldest refused record and prepares
// it (never a record that failed for a real reason); when the circuit
// closes it prepares a canary, refused records first, then steps that
// double (1, 2, 4, ...), each once the last has succeeded, until the
// incident's records are drained, each prepared once; the record from
// before the incident waits out its backoff.
func TestDrainAfterTheCircuitCloses(t *testing.T) {
	e := newDrainEnv(t)
	before := e.records(t, 0, 1, "Unavailable")
	e.clock.Set(t0.Add(time.Minute))
	realIDs := e.records(t, 100, 3, "Unavailable")
	trip := opened
	trip.FirstFailureAt = e.clock.Now().UnixMilli()
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), resolved(t, circuit.Policy{CoolDown: 10 * time.Second}), trip)
	})
	e.clock.Set(t0.Add(time.Minute + 5*time.Second))
	refused := e.records(t, 200, 25, circuit.ErrorCode)
	s, _ := e.start(t, scheduler.DrainPolicy{Rate: 1000})

	d := e.tickUntil(t, "the drain waits", func(d circuit.Drain) bool { return d.Phase == circuit.DrainWaiting })
	assert.Equal(t, t0.Add(time.Minute).UnixMilli(), d.From)
	// Every record is due; the pass leaves fn's alone while the circuit is open.
	e.clock.Set(t0.Add(3 * time.Hour))
	e.passes <- e.clock.Now()
	require.Eventually(t, func() bool { return s.Stats().Passes >= 1 }, waitFor, poll)
	assert.Zero(t, s.Stats().Prepared, "nothing prepared while the circuit is open")
	assert.Equal(t, 29, s.Stats().Held)

	// Long past the cool-down, no live call came: the drain probes. The
	// replays are held from here on, each batch replayed only once the
	// test has seen it, so that no step (nor a second probe, which a
	// half-open circuit wants after a success) passes between two looks.
	e.pause(t)
	d = e.tickUntil(t, "a probe", func(d circuit.Drain) bool { return d.Probes == 1 })
	require.NotNil(t, d.Probe)
	probed := d.Probe.ID
	assert.Contains(t, refused, probed, "a refused record is the probe (they all failed at one time)")
	st, _, err := e.circuits.Get(t.Context(), fnCircuit)
	require.NoError(t, err)
	require.Equal(t, circuit.HalfOpen, st.Phase, "the drain claimed the probe")
	pr, ok := st.ProbeOf(e.clock.Now(), probed)
	require.True(t, ok, "for that record: its replay is the probe")
	assert.Equal(t, e.status(t, probed).EventID.ID, pr.Event)

	// The probes closed it (here: an operator).
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "smtp is back"})
	})
	d = e.tickUntil(t, "the canary", func(d circuit.Drain) bool { return d.Phase == circuit.DrainCanary && len(d.Batch) == 1 })
	assert.Contains(t, refused, d.Batch[0].ID, "refused records first: the canary can fail only if the dependency does")
	assert.NotEqual(t, probed, d.Batch[0].ID)
	var sizes []int
	for d.Phase != circuit.DrainDone {
		e.replayBatch(t, d.Batch)
		d = e.tickUntil(t, "a step", func(n circuit.Drain) bool {
			return n.Phase == circuit.DrainDone || (len(n.Batch) > 0 && n.BatchAt != d.BatchAt)
		})
		if d.Phase != circuit.DrainDone {
			sizes = append(sizes, len(d.Batch))
		}
	}
	e.paused.Store(false)
	assert.Equal(t, []int{2, 4, 8, 12}, sizes, "steps double while they succeed, the last takes the rest")
	assert.Equal(t, 1, d.Probes, "one probe")
	assert.Equal(t, aggregate.StatusSucceeded, e.status(t, probed).Status, "the probe's replay succeeded")
	assert.Len(t, e.prepares(t, probed), 1, "and was not drained again")
	assert.Equal(t, 27, d.Released)
	assert.Equal(t, 27, d.Succeeded)
	assert.Empty(t, e.prepares(t, before[0]), "the record from before the incident waits out its backoff")
	for _, id := range append(realIDs, refused...) {
		assert.Equal(t, aggregate.StatusSucceeded, e.status(t, id).Status, id)
		assert.Len(t, e.prepares(t, id), 1, "%s is prepared once", id)
	}
	assert.Equal(t, uint64(1), s.Stats().Drains.Started)
	assert.Equal(t, uint64(1), s.Stats().Drains.Done)
}

// A step below the threshold halves the next step and the rate; a canary
// below it does not open the circuit (the circuit weighs the replays'
// fresh calls itself): the drain waits a cool-down and tries the next.
func TestDrainHalvesThenWaitsOutAFailedCanary(t *testing.T) {
	e := newDrainEnv(t)
	e.records(t, 0, 40, circuit.ErrorCode)
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	})
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "y"})
	})
	s, _ := e.start(t, scheduler.DrainPolicy{Rate: 1000})
	// The replayer answers only the batches the test lets through, so no
	// later step is answered before the dependency fails again (a step the
	// drain prepares in the tick that judges the one before would be).
	e.pause(t)
	d := e.tickUntil(t, "the canary", func(d circuit.Drain) bool { return d.Phase == circuit.DrainCanary && len(d.Batch) == 1 })
	e.replayBatch(t, d.Batch)
	d = e.tickUntil(t, "a step of 2", func(n circuit.Drain) bool { return len(n.Batch) == 2 && n.BatchAt != d.BatchAt })
	e.replayBatch(t, d.Batch)
	d = e.tickUntil(t, "a step of 2 judged", func(d circuit.Drain) bool { return d.Judged == 2 })
	assert.Equal(t, 3, d.Released, "the canary and a step of 2 succeeded")
	assert.Equal(t, 4, d.Size)
	// The dependency fails again, for every replay from the next step on.
	e.healthy.Store(false)
	e.paused.Store(false)
	d = e.tickUntil(t, "halved", func(d circuit.Drain) bool { return d.Judged == 3 })
	assert.Equal(t, 2, d.Size, "halved")
	assert.Equal(t, 500.0, d.Rate, "and the rate")
	d = e.tickUntil(t, "halved to the canary", func(d circuit.Drain) bool { return d.Judged == 4 })
	assert.Equal(t, 1, d.Size)
	assert.Equal(t, 250.0, d.Rate)
	d = e.tickUntil(t, "the canary failed", func(d circuit.Drain) bool { return d.Judged == 5 })
	assert.Contains(t, d.Note, "succeeded for 0 of 1 records refused by the circuit (0%), below 50%; the next canary in 10s")
	assert.Equal(t, d.UpdatedAt+10000, d.NextAt, "a cool-down from the judgement")
	st, _, err := e.circuits.Get(t.Context(), fnCircuit)
	require.NoError(t, err)
	assert.Equal(t, circuit.Closed, st.Phase, "the drain does not open the circuit")
	assert.Equal(t, uint64(1), s.Stats().Drains.CanaryFailed)
	e.healthy.Store(true)
	e.clock.Set(e.clock.Now().Add(10 * time.Second))
	d = e.tickUntil(t, "done", func(d circuit.Drain) bool { return d.Phase == circuit.DrainDone })
	assert.Equal(t, 40, d.Released)
	assert.Equal(t, 1000.0, d.Rate, "good steps win the halved rate back")
	assert.Equal(t, 7, d.Failed, "the steps of 4 and 2 and the canary failed; their records follow their own retries")
}

// Records that fail for their own reason once the circuit closed (bad
// events the circuit had refused) follow their own retry spec: they
// neither open the circuit nor stall the drain, which drains the others.
func TestBadRecordsNeverStallTheDrain(t *testing.T) {
	e := newDrainEnv(t)
	ids := e.records(t, 0, 30, circuit.ErrorCode)
	for i, id := range ids {
		if i%3 == 0 {
			e.bad.Store(id, true) // 30 %: the oldest, the canary, among them
		}
	}
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	})
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "y"})
	})
	e.start(t, scheduler.DrainPolicy{Rate: 1000, Threshold: 0.5})
	deadline := time.Now().Add(waitFor)
	var d circuit.Drain
	for d.Phase != circuit.DrainDone {
		require.True(t, time.Now().Before(deadline), "the drain is done: %+v", d)
		e.clock.Set(e.clock.Now().Add(time.Second)) // past any canary's wait
		e.tick(t)
		if got, ok, err := e.drains.Get(t.Context(), fnCircuit); err == nil && ok {
			d = got
		}
		time.Sleep(poll)
	}
	st, _, err := e.circuits.Get(t.Context(), fnCircuit)
	require.NoError(t, err)
	assert.Equal(t, circuit.Closed, st.Phase, "bad records never open the circuit")
	for i, id := range ids {
		r := e.status(t, id)
		assert.Len(t, e.prepares(t, id), 1, "%s is drained once", id)
		if i%3 == 0 {
			assert.Equal(t, aggregate.StatusFailed, r.Status, id)
			assert.Equal(t, "Unavailable", r.Error.ErrorCode, "%s failed for its own reason", id)
			assert.Equal(t, int32(1), r.RetryState.Retries, "%s keeps its retry spec: one attempt of ten", id)
		} else {
			assert.Equal(t, aggregate.StatusSucceeded, r.Status, id)
		}
	}
}

// With no refused record, an open circuit that no call probed is probed
// with the incident's record due for a retry that failed last; with no
// record at all it is half-opened, so that the next call probes: an idle
// circuit is never left open past its cool-down.
func TestDrainProbesWithoutRefusedRecords(t *testing.T) {
	e := newDrainEnv(t)
	e.clock.Set(t0.Add(time.Minute))
	trip := opened
	trip.FirstFailureAt = e.clock.Now().UnixMilli()
	ids := e.records(t, 0, 2, "Unavailable")
	e.clock.Set(t0.Add(time.Minute + time.Second))
	last := e.records(t, 10, 1, "Unavailable")
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), resolved(t, circuit.Policy{CoolDown: 10 * time.Second}), trip)
	})
	e.pause(t)
	e.start(t, scheduler.DrainPolicy{Rate: 1000})
	e.clock.Set(t0.Add(3 * time.Hour)) // past the cool-down, every record due
	d := e.tickUntil(t, "a probe", func(d circuit.Drain) bool { return d.Probes == 1 })
	assert.Equal(t, last[0], d.Probe.ID, "the last failure of the incident")
	assert.NotContains(t, ids, d.Probe.ID)
	st, _, err := e.circuits.Get(t.Context(), fnCircuit)
	require.NoError(t, err)
	_, ok := st.ProbeOf(e.clock.Now(), last[0])
	assert.True(t, ok, "its replay is the probe")

	// Its replay fails, and no processor settled the claim (its replay ran
	// before the claim reached it, say): the drain frees the probe and
	// probes with the next record.
	e.healthy.Store(false)
	e.paused.Store(false)
	require.Eventually(t, func() bool {
		return e.status(t, last[0]).Status == aggregate.StatusFailed && e.status(t, last[0]).RetryState.Retries == 1
	},
		waitFor, poll)
	e.pause(t)
	d = e.tickUntil(t, "a second probe", func(d circuit.Drain) bool { return d.Probes == 2 })
	assert.Contains(t, ids, d.Probe.ID, "another record of the incident")
	st, _, err = e.circuits.Get(t.Context(), fnCircuit)
	require.NoError(t, err)
	_, ok = st.ProbeOf(e.clock.Now(), d.Probe.ID)
	assert.True(t, ok, "claimed for it")

	// Another function's circuit, open with no record at all.
	other := circuit.Function{Context: fnCircuit.Context, Processor: fnCircuit.Processor, Name: "other"}
	_, _, _, err = e.circuits.Update(t.Context(), other, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), resolved(t, circuit.Policy{CoolDown: 10 * time.Second}), trip)
	})
	require.NoError(t, err)
	e.clock.Set(e.clock.Now().Add(12 * time.Second))
	deadline := time.Now().Add(waitFor)
	for {
		e.tick(t)
		st, _, err := e.circuits.Get(t.Context(), other)
		require.NoError(t, err)
		if st.Phase == circuit.HalfOpen {
			assert.Nil(t, st.Probe, "no probe under way: the next call probes")
			tr, _ := st.LastTransition()
			assert.Equal(t, scheduler.Actor, tr.Instance)
			break
		}
		require.True(t, time.Now().Before(deadline), "the idle circuit half-opens: %+v", st)
		time.Sleep(poll)
	}
}

// A drain prepares no faster than its rate: a step of n waits n/rate
// after the one before it was prepared.
func TestDrainKeepsToItsRate(t *testing.T) {
	e := newDrainEnv(t)
	e.records(t, 0, 10, circuit.ErrorCode)
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	})
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "y"})
	})
	e.start(t, scheduler.DrainPolicy{Rate: 2})
	d := e.tickUntil(t, "the canary judged", func(d circuit.Drain) bool { return d.Judged == 1 })
	assert.Equal(t, 2, d.Size, "the next step: 2, a second's worth at 2/s")
	for range 20 {
		e.tick(t)
	}
	assert.Empty(t, e.drain(t).Batch, "the canary was prepared at the clock's time; half a second must pass")
	e.clock.Set(e.clock.Now().Add(500 * time.Millisecond))
	e.tickUntil(t, "the next step", func(d circuit.Drain) bool { return len(d.Batch) == 2 })
}

// The progress is in the bucket: a scheduler that takes over continues
// the drain where the last one stopped, and prepares nothing twice.
func TestDrainSurvivesARestart(t *testing.T) {
	e := newDrainEnv(t)
	ids := e.records(t, 0, 12, circuit.ErrorCode)
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	})
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "y"})
	})
	_, stop := e.start(t, scheduler.DrainPolicy{Rate: 1000})
	d := e.tickUntil(t, "the canary judged", func(d circuit.Drain) bool { return d.Judged == 1 })
	e.pause(t) // hold the replays: the next step stays under way
	d = e.tickUntil(t, "a step of 2 under way", func(d circuit.Drain) bool { return len(d.Batch) == 2 })
	started := d.StartedAt
	stop()
	e.paused.Store(false)
	e.start(t, scheduler.DrainPolicy{Rate: 1000})
	d = e.tickUntil(t, "done", func(d circuit.Drain) bool { return d.Phase == circuit.DrainDone })
	assert.Equal(t, started, d.StartedAt, "the same drain")
	assert.Equal(t, 12, d.Released)
	for _, id := range ids {
		assert.Len(t, e.prepares(t, id), 1, "%s is prepared once", id)
	}
}

func TestDrainOptionsAreChecked(t *testing.T) {
	for _, c := range []struct {
		cfg  scheduler.DrainConfig
		want string
	}{
		{scheduler.DrainConfig{}, "drains need the circuits"},
		{scheduler.DrainConfig{Circuits: &circuit.Watcher{}, Records: &projection.Index{}, Progress: &circuit.Drains{}, Policy: scheduler.DrainPolicy{Threshold: 2}}, "drain threshold must be a fraction above 0 and at most 1, got 2"},
		{scheduler.DrainConfig{Circuits: &circuit.Watcher{}, Records: &projection.Index{}, Progress: &circuit.Drains{}, Policy: scheduler.DrainPolicy{Rate: 0.5}}, "drain rate must be from 1 to 100000 records/s, got 0.5"},
		{scheduler.DrainConfig{Circuits: &circuit.Watcher{}, Records: &projection.Index{}, Progress: &circuit.Drains{}, Policy: scheduler.DrainPolicy{Canary: 501}}, "drain canary must be between 1 and 500 records, got 501"},
	} {
		_, err := scheduler.New(nil, nil, mustLeases(t), scheduler.WithDrains(c.cfg))
		require.ErrorIs(t, err, scheduler.ErrInvalidOption)
		assert.Contains(t, err.Error(), c.want)
	}
}

func mustLeases(t *testing.T) *scheduler.Leases {
	t.Helper()
	l, err := scheduler.OpenLeases(t.Context(), natstest.New(t).JetStream())
	require.NoError(t, err)
	return l
}

func resolved(t *testing.T, p circuit.Policy) circuit.Policy {
	t.Helper()
	p, err := p.Resolve()
	require.NoError(t, err)
	return p
}

// Every record the incident left is drained, those whose retries ran out
// during it too: a refused record and one that failed within the incident,
// both out of retries, are force-prepared; one out of retries before the
// incident is not.
func TestDrainTakesRecordsOutOfRetries(t *testing.T) {
	e := newDrainEnv(t)
	create := func(i int, code string) string {
		evt := fmt.Sprintf("evt-x%03d", i)
		id := aggregate.RecordID(evt, fn)
		r, err := e.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
			Function: fn, Error: aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "x"}, ExecuteAt: e.clock.Now().UnixMilli(),
			RetrySpec: &aggregate.RetrySpec{MaxRetries: 0, MinBackoff: 3600, ExecutionTimeout: 60}, Recoverable: aggregate.Recoverable,
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		e.indexed(t, map[string]uint64{id: r.Version})
		return id
	}
	before := create(0, "Unavailable")
	e.clock.Set(t0.Add(time.Minute))
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	})
	e.clock.Set(t0.Add(time.Minute + time.Second))
	within := create(1, "Unavailable")
	refusedID := create(2, circuit.ErrorCode)
	e.clock.Set(t0.Add(2 * time.Minute))
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "y"})
	})
	e.start(t, scheduler.DrainPolicy{Rate: 1000})
	d := e.tickUntil(t, "done", func(d circuit.Drain) bool { return d.Phase == circuit.DrainDone })
	assert.Equal(t, 2, d.Released)
	for _, id := range []string{within, refusedID} {
		assert.Len(t, e.prepares(t, id), 1, "%s force-prepared by the drain", id)
		assert.Equal(t, aggregate.StatusSucceeded, e.status(t, id).Status)
	}
	assert.Empty(t, e.prepares(t, before), "out of retries before the incident: an operator's")
}

// A frozen circuit holds its own function's records, never the others':
// while fn's circuit is open a pass prepares, past 150 held records of fn,
// every due record of another function, on time.
func TestAnOpenCircuitHoldsOnlyItsFunction(t *testing.T) {
	e := newDrainEnv(t)
	e.pause(t)
	held := e.records(t, 0, 150, "Unavailable")
	other := aggregate.FunctionInfo{FunctionKind: fn.FunctionKind, ContextName: fn.ContextName, ProcessorName: "Ledger", Name: "post"}
	versions := map[string]uint64{}
	var free []string
	for i := range 5 {
		evt := fmt.Sprintf("evt-l%03d", i)
		id := aggregate.RecordID(evt, other)
		r, err := e.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
			Function: other, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "x"}, ExecuteAt: e.clock.Now().UnixMilli() + 1,
			RetrySpec: &aggregate.RetrySpec{MaxRetries: 10, MinBackoff: 3600, ExecutionTimeout: 60}, Recoverable: aggregate.Recoverable,
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		versions[id] = r.Version
		free = append(free, id)
	}
	e.indexed(t, versions)
	e.setCircuit(t, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "maintenance"})
	})
	s, _ := e.start(t, scheduler.DrainPolicy{Rate: 1000})
	e.tickUntil(t, "the drain waits", func(d circuit.Drain) bool { return d.Phase == circuit.DrainWaiting })
	e.clock.Set(t0.Add(3 * time.Hour)) // everything due
	e.passes <- e.clock.Now()
	require.Eventually(t, func() bool { return s.Stats().Passes >= 1 }, waitFor, poll)
	assert.Equal(t, uint64(len(free)), s.Stats().Prepared, "the other function's records, past the held ones: %+v", s.Stats())
	for _, id := range free {
		assert.Len(t, e.prepares(t, id), 1)
	}
	for _, id := range held[:10] {
		assert.Empty(t, e.prepares(t, id), "held while its circuit is open")
	}
}

// Finding 8 of "derived state never outranks the event store": a bad
// drain written while the scheduler ran was found only by drains list.
// The lease holder reads the bucket every minute of its clock: a drain
// that does not validate (here: next step in the year 9999) is
// quarantined, once per revision, and never acted on.
func TestABadDrainWrittenWhileTheSchedulerRunsIsQuarantined(t *testing.T) {
	e := newDrainEnv(t)
	q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	e.drains, err = circuit.OpenDrains(t.Context(), e.js, "", 1, circuit.WithDrainsQuarantine(q))
	require.NoError(t, err)
	e.start(t, scheduler.DrainPolicy{Rate: 1000})
	e.tick(t)
	e.tick(t) // taken once the first is done: the drains are loaded
	kv, err := e.js.KeyValue(t.Context(), circuit.DefaultDrainBucket)
	require.NoError(t, err)
	key := "order.Mailer.onRefund"
	rev, err := kv.Put(t.Context(), key, []byte(`{"function":{"context":"order","processor":"Mailer","name":"onRefund"},"phase":"waiting","nextAt":253402300799000}`))
	require.NoError(t, err)
	found := func() []quarantine.Entry {
		all, err := q.All(t.Context(), quarantine.Query{})
		require.NoError(t, err)
		var out []quarantine.Entry
		for _, x := range all {
			if x.Key == key && x.Seq == rev {
				out = append(out, x)
			}
		}
		return out
	}
	require.Eventually(t, func() bool {
		e.clock.Set(e.clock.Now().Add(30 * time.Second))
		e.tick(t)
		return len(found()) > 0
	}, waitFor, poll, "quarantined by the scheduler")
	for range 4 { // later checks
		e.clock.Set(e.clock.Now().Add(time.Minute))
		e.tick(t)
	}
	got := found()
	require.Len(t, got, 1, "once per revision")
	assert.Contains(t, got[0].Error, "nextAt")
}
