package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/dashboard"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/server"
)

// stormRig is what a storm runs on: the control plane's parts (projector,
// index, circuit watcher, scheduler with its drains) on buckets of the
// storm's own, and the processor with the storm's functions. close
// deletes what open created, in reverse.
type stormRig struct {
	*rig
	cleanups []func()
	index    *projection.Index
	circuits *circuit.Store
	drains   *circuit.Drains
	sched    *scheduler.Scheduler
	p        *processor.Processor
	counted  *outcomes
	tr       *stormTransitions
	state    *stormState
	stream   string
}

// open builds the rig for c and starts it; on an error, close still
// deletes what it created.
func (sr *stormRig) open(ctx context.Context, env *Env, c StormConfig, log *slog.Logger) error {
	r, err := newRig(ctx, env, "storm")
	if err != nil {
		return err
	}
	sr.rig = r
	names := "bench_" + env.Prefix + "_storm"
	views, err := projection.OpenViews(ctx, env.JS, projection.WithBucket(names+"_views"), projection.WithBucketStorage(env.Storage))
	if err != nil {
		return err
	}
	sr.deleteBucket(env, names+"_views")
	proj, err := projection.NewProjector(env.JS, r.store, views, projection.WithDurable(names), projection.WithLogger(log))
	if err != nil {
		return err
	}
	if sr.index, err = projection.NewIndex(views, r.store); err != nil {
		return err
	}
	watcher, err := sr.openScheduler(ctx, env, c, names, log)
	if err != nil {
		return err
	}
	if c.Dashboard != nil {
		if err := sr.serveDashboard(c.Dashboard, views, watcher, log); err != nil {
			return err
		}
	}
	if err := sr.openProcessor(env, c, log); err != nil {
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{proj.Run, sr.index.Run, watcher.Run, sr.sched.Run} {
		wg.Go(func() { _ = run(bg) })
	}
	sr.cleanups = append(sr.cleanups, func() { cancel(); wg.Wait() })
	sr.stream = r.store.StreamName(benchContext)
	for _, g := range []string{"Mailer", "Ledger"} {
		durable := processor.DurableName(benchContext, g)
		sr.cleanups = append(sr.cleanups, func() { _ = env.JS.DeleteConsumer(context.Background(), sr.stream, durable) })
	}
	stopProc, err := startProcessor(ctx, sr.p)
	if err != nil {
		return err
	}
	sr.cleanups = append(sr.cleanups, stopProc)
	return nil
}

// openScheduler opens the leases, circuits and drains buckets and the
// scheduler that drains Mailer.send's circuit; it returns the circuit
// watcher, not yet running.
func (sr *stormRig) openScheduler(ctx context.Context, env *Env, c StormConfig, names string, log *slog.Logger) (*circuit.Watcher, error) {
	leases, err := scheduler.OpenLeases(ctx, env.JS, scheduler.WithLeaseBucket(names+"_leases"))
	if err != nil {
		return nil, err
	}
	sr.deleteBucket(env, names+"_leases")
	if sr.circuits, err = circuit.OpenStore(ctx, env.JS, circuit.WithBucket(names+"_circuits"), circuit.WithStorage(env.Storage)); err != nil {
		return nil, err
	}
	sr.deleteBucket(env, names+"_circuits")
	sr.tr = &stormTransitions{fn: circuit.Of(aggregate.FunctionInfo{ContextName: benchContext, ProcessorName: stormSend.Processor, Name: stormSend.Name})}
	watcher := sr.circuits.Watcher("", log, sr.tr.observe)
	if sr.drains, err = circuit.OpenDrains(ctx, env.JS, names+"_drains", 1); err != nil {
		return nil, err
	}
	sr.deleteBucket(env, names+"_drains")
	sr.sched, err = scheduler.New(sr.index, sr.records, leases, scheduler.WithPeriod(c.SchedulerPeriod), scheduler.WithBatch(c.SchedulerBatch),
		scheduler.WithInitialDelay(0), scheduler.WithLogger(log),
		scheduler.WithDrains(scheduler.DrainConfig{Circuits: watcher, Store: sr.circuits, CircuitPolicy: c.Circuit, Records: sr.index, Progress: sr.drains,
			Policy: scheduler.DrainPolicy{Rate: c.DrainRate}, Capacity: scheduler.ReplayRoom(env.JS, sr.store.StreamName(aggregate.Context))}))
	return watcher, err
}

// openProcessor builds the processor with the storm's three functions,
// their calls observed by sr.state.
func (sr *stormRig) openProcessor(env *Env, c StormConfig, log *slog.Logger) error {
	rec, err := recorder.New(sr.records)
	if err != nil {
		return err
	}
	sr.counted = &outcomes{FailureRecorder: rec}
	opts := []processor.Option{processor.WithRecorder(sr.counted), processor.WithRecords(sr.records), processor.WithLogger(log),
		processor.WithCircuitStore(sr.circuits), processor.WithCircuitPolicy(c.Circuit)}
	if c.ImmediateRetries >= 0 {
		retry := processor.Retry{Retries: c.ImmediateRetries, Backoff: processor.DefaultRetry.Backoff}
		if c.RetryWait > 0 {
			retry.Backoff.Min = c.RetryWait
		}
		opts = append(opts, processor.WithImmediateRetry(retry))
	} else if c.RetryWait > 0 {
		retry := processor.DefaultRetry
		retry.Backoff.Min = c.RetryWait
		opts = append(opts, processor.WithImmediateRetry(retry))
	}
	if sr.p, err = processor.New(env.JS, sr.store, benchContext, append(opts, c.Processor...)...); err != nil {
		return err
	}
	s := &stormState{allOK: make(chan struct{}), badPct: c.BadEvents, ids: make([]string, c.Events)}
	run := uuid.NewString()
	bad := 0
	for i := range s.ids {
		s.ids[i] = run + "-" + strconv.Itoa(i)
		if BadEvent(s.ids[i], c.BadEvents) {
			bad++
		}
	}
	s.total = 3*c.Events - bad // Mailer.send never succeeds on a bad event
	s.badEvents = bad
	sr.counted.state = s
	s.metOutage = map[string]bool{}
	for i := range s.ok {
		s.ok[i], s.seen[i] = map[string]bool{}, map[string]bool{}
	}
	sr.state = s
	spec := aggregate.RetrySpec{MaxRetries: 20, MinBackoff: int32(max(c.MinBackoff/time.Second, 0)), ExecutionTimeout: 120}
	for i, fn := range []processor.Function{stormSend, stormAudit, stormPost} {
		h := processor.HandleBody(func(ctx context.Context, d *processor.Delivery, b stormBody) error { return s.call(ctx, i, d, b) })
		if err := sr.p.Register(fn, h, processor.RetrySpec(spec)); err != nil {
			return err
		}
	}
	return nil
}

func (sr *stormRig) deleteBucket(env *Env, bucket string) {
	sr.cleanups = append(sr.cleanups, func() { _ = env.JS.DeleteKeyValue(context.Background(), bucket) })
}

// close undoes open, last step first.
func (sr *stormRig) close() {
	for i := len(sr.cleanups) - 1; i >= 0; i-- {
		sr.cleanups[i]()
	}
	if sr.rig != nil {
		sr.rig.close()
	}
}

// result is what the storm measured, once it ended (recovery seconds
// after the outage's end, or -1).
func (sr *stormRig) result(ctx context.Context, c StormConfig, start time.Time, recovery float64, peaks map[string]*atomic.Uint64) StormResult {
	s := sr.state
	res := StormResult{Config: c, Events: c.Events, RecoverySeconds: recovery, Seconds: time.Since(start).Seconds(),
		Calls: map[string]uint64{}, ReplayCalls: map[string]uint64{}, CallsDuringOutage: map[string]uint64{}, ReplayCallsDuringOutage: map[string]uint64{},
		Refused: map[string]uint64{}, Probes: map[string]uint64{}, Reruns: map[string]uint64{}, Succeeded: map[string]int{},
		BacklogPeak: map[string]uint64{}}
	res.RecordsByStatus, res.RecordsOpen = settledRecords(ctx, sr.index)
	// Counted once the records settled: the last events' recordings may
	// still be on their way when the storm ends.
	res.RecordsCreated, res.AlreadyRecorded = sr.counted.created.Load(), sr.counted.already.Load()
	s.mu.Lock()
	for i, name := range StormFunctions {
		res.Calls[name], res.CallsDuringOutage[name], res.Reruns[name] = s.calls[i].Load(), s.during[i].Load(), s.reruns[i].Load()
		res.ReplayCalls[name], res.ReplayCallsDuringOutage[name] = s.replays[i].Load(), s.replaysDuring[i].Load()
		res.Succeeded[name] = len(s.ok[i])
		fn := []processor.Function{stormSend, stormAudit, stormPost}[i]
		if m := sr.p.FunctionMetrics(fn.Processor, fn.Name); m != nil {
			res.Refused[name], res.Probes[name] = m.Refused.Load(), m.Probes.Load()
		}
	}
	res.Sibling = s.lat[1].phases()
	res.Other = s.lat[2].phases()
	s.mu.Unlock()
	for g, v := range peaks {
		res.BacklogPeak[g] = v.Load()
	}
	res.Transitions = sr.tr.since(start.Add(c.Before))
	if st, _, err := sr.circuits.Get(ctx, sr.tr.fn); err == nil {
		res.FinalCircuit = st.Phase
	} else {
		res.FinalCircuit = circuit.Closed
	}
	// The drain judges its last step a tick after the last replay.
	for deadline := time.Now().Add(10 * time.Second); ; {
		d, ok, err := sr.drains.Get(ctx, sr.tr.fn)
		if err == nil && ok {
			res.Drain = &d
		}
		if res.Drain == nil || !res.Drain.Draining() || time.Now().After(deadline) || sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) != nil {
			break
		}
	}
	res.DrainProbes = sr.sched.Stats().Drains.Probes
	res.BadEvents = s.badEvents
	res.HealthyRefused, res.HealthyRecorded = s.healthyRefused.Load(), s.healthyRecorded.Load()
	res.StrayRecords = s.strayRecords.Load()
	outage := c.Outage.Seconds()
	for _, tr := range res.Transitions {
		if tr.To == circuit.Open && tr.From == circuit.Closed && (tr.At < 0 || tr.At > outage) {
			res.FalseOpens++
		}
	}
	return res
}

// watchLateness keeps in late the most the oldest due record waited (ms),
// sampled every second until ctx ends, while Mailer.send's circuit is
// closed and no drain holds its records (their wait is the drain's, not
// the scheduler's).
func (sr *stormRig) watchLateness(ctx context.Context, late *atomic.Int64) {
	wait.Every(ctx, time.Second, func() {
		if st, _, err := sr.circuits.Get(ctx, sr.tr.fn); err == nil && st.Phase != circuit.Closed {
			return
		}
		if d, ok, err := sr.drains.Get(ctx, sr.tr.fn); err != nil || (ok && d.Draining()) {
			return
		}
		due := sr.index.Due(time.Now(), 1)
		if len(due) == 0 {
			return
		}
		if ms := time.Now().UnixMilli() - due[0].NextRetryAt; ms > late.Load() {
			late.Store(ms)
		}
	})
}

// serveDashboard serves the storm's control plane (the HTTP API and the
// dashboard, without tokens) on l until close.
func (sr *stormRig) serveDashboard(l net.Listener, views jetstream.KeyValue, watcher *circuit.Watcher, log *slog.Logger) error {
	d, err := dashboard.New(dashboard.Config{Index: sr.index, Events: sr.store, Changes: views, Logger: log})
	if err != nil {
		return err
	}
	api := server.New(server.Config{Queries: sr.index, Commands: sr.records, Logger: log, Dashboard: d,
		Circuits: &server.Circuits{Watcher: watcher, Store: sr.circuits, Drains: sr.drains}})
	hs := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(bg) })
	wg.Go(func() { _ = api.Run(bg) })
	wg.Go(func() { _ = hs.Serve(l) })
	sr.cleanups = append(sr.cleanups, func() { _ = hs.Close(); cancel(); wg.Wait() })
	return nil
}
