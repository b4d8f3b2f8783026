package bench

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// An e2e operation starts when a function's failure has been recorded
// (untimed: publishing the event and the first call come before) and ends
// when the function's replay succeeded and the record is SUCCEEDED. The
// record's retry spec has a 0 s backoff, so what is measured is amends:
// the projection seeing the record, a scheduler pass every 5 ms preparing
// it, the replay and the result. There is no raw baseline.
func prepareE2E(ctx context.Context, env *Env) (*Pair, error) {
	r, err := newRig(ctx, env, "e2e")
	if err != nil {
		return nil, err
	}
	var stops []func()
	fail := func(err error) (*Pair, error) {
		for _, s := range stops {
			s()
		}
		r.close()
		return nil, err
	}
	names := "bench_" + env.Prefix + "_e2e"
	views, err := projection.OpenViews(ctx, env.JS, projection.WithBucket(names+"_views"), projection.WithBucketStorage(env.Storage))
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { _ = env.JS.DeleteKeyValue(context.Background(), names+"_views") })
	proj, err := projection.NewProjector(env.JS, r.store, views, projection.WithDurable(names), projection.WithLogger(discard))
	if err != nil {
		return fail(err)
	}
	index, err := projection.NewIndex(views, r.store)
	if err != nil {
		return fail(err)
	}
	leases, err := scheduler.OpenLeases(ctx, env.JS, scheduler.WithLeaseBucket(names+"_leases"))
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { _ = env.JS.DeleteKeyValue(context.Background(), names+"_leases") })
	sched, err := scheduler.New(index, r.records, leases, scheduler.WithPeriod(5*time.Millisecond), scheduler.WithInitialDelay(0), scheduler.WithLogger(discard))
	if err != nil {
		return fail(err)
	}
	// The function fails on each event's first call only.
	var mu sync.Mutex
	called := map[string]bool{}
	p, err := processor.New(env.JS, r.store, benchContext, processor.WithRecorder(r.rec), processor.WithRecords(r.records),
		processor.WithImmediateRetry(processor.Retry{}), processor.WithLogger(discard),
		processor.WithCircuitPolicy(circuit.Policy{Off: true})) // every event fails once: its circuit would open
	if err != nil {
		return fail(err)
	}
	err = p.Register(processor.Function{Processor: billing.ProcessorName, Name: billing.Name, AggregateTypes: []string{"order"}, Events: []string{"order_placed"}},
		func(_ context.Context, d *processor.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			if !called[d.Event.ID] {
				called[d.Event.ID] = true
				return errAlwaysFails
			}
			return nil
		}, processor.RetrySpec(aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 0, ExecutionTimeout: 60}))
	if err != nil {
		return fail(err)
	}
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{proj.Run, index.Run, sched.Run} {
		wg.Go(func() { _ = run(bg) })
	}
	stops = append(stops, func() { cancel(); wg.Wait() })
	stopProc, err := startProcessor(ctx, p)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, stopProc)

	type pendingRecord struct{ recorded, succeeded *signal }
	pending := map[int]pendingRecord{} // by worker
	var pmu sync.Mutex
	return &Pair{
		Close: func() {
			for i := len(stops) - 1; i >= 0; i-- {
				stops[i]()
			}
			r.close()
		},
		Before: func(ctx context.Context, _ string, w, i int) error {
			s := orderStream("e-"+strconv.Itoa(w)+"-"+strconv.Itoa(i)+"-"+env.Prefix, 1)
			id := aggregate.RecordID(s.Events[0].ID, billing)
			pr := pendingRecord{r.rec.expect(string(processor.OutcomeRecorded), id), r.rec.expect("SUCCEEDED", id)}
			pmu.Lock()
			pending[w] = pr
			pmu.Unlock()
			_, err := r.store.Append(ctx, s, 0)
			return err
		},
		Amends: func(ctx context.Context, w, _ int) error {
			pmu.Lock()
			pr := pending[w]
			pmu.Unlock()
			if err := pr.recorded.wait(ctx); err != nil {
				return err
			}
			if err := pr.succeeded.wait(ctx); err != nil {
				return err
			}
			ReportLatency(ctx, pr.succeeded.at.Sub(pr.recorded.at))
			return nil
		},
	}, nil
}
