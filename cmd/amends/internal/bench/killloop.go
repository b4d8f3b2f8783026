package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/scheduler"
)

// KillLoopRow is one kill -9 of the kill loop: three instances preparing
// real records while more are made.
type KillLoopRow struct {
	Round  int    `json:"round"`
	Killed string `json:"killed"`
	// Reserved is from the kill until another instance answers every
	// record again.
	Reserved time.Duration `json:"reserved"`
	// Short counts the answers, from the kill until the instance is back,
	// that lacked records without saying so: it must be 0.
	Short int `json:"short"`
	// Missing counts the answers that said partitions were missing.
	Missing int `json:"missing"`
}

// KillLoopResult is the kill loop's figures and checks.
type KillLoopResult struct {
	Records int           `json:"records"`
	Made    int           `json:"madeDuringLoop"`
	Rounds  []KillLoopRow `json:"rounds"`
	// Prepared is the records prepared by the end; Twice those with more
	// than one CompensationPrepared event (each was due once): it must be
	// 0.
	Prepared int `json:"prepared"`
	Twice    int `json:"preparedTwice"`
}

// killLoopInstances is how many instances the kill loop runs.
const killLoopInstances = 3

// RunKillLoop runs the kill loop on a new cluster: records made
// through the event store over procs processors, three instances with
// their passes on, and rounds times one of them killed with SIGKILL and
// started again while more records are made. Every round checks that the
// records are served again and that no answer at a live instance is short
// without saying so; at the end, that every record was prepared once.
func RunKillLoop(ctx context.Context, c PartitionsConfig, records, procs, rounds int) (KillLoopResult, error) {
	res := KillLoopResult{Records: records}
	urls, js, stop, err := c.Cluster(ctx)
	if err != nil {
		return res, err
	}
	defer stop()
	store, err := jsstore.New(js, jsstore.WithReplicas(3), jsstore.WithRemovable(aggregate.Context))
	if err != nil {
		return res, err
	}
	l := &killLoop{c: c, urls: urls, svc: aggregate.NewService(store), zipf: rand.NewZipf(rand.New(rand.NewPCG(uint64(procs), 11)), 1.1, 1, uint64(procs-1))}
	ids := make([]string, 0, records)
	for i := range records {
		id, err := l.make(ctx, "stable", i)
		if err != nil {
			return res, err
		}
		ids = append(ids, id)
	}
	defer func() {
		for _, in := range l.instances {
			in.stop()
		}
	}()
	if err := l.start(ctx, records); err != nil {
		return res, err
	}
	made, stopLoad := l.load(ctx)
	for round := range rounds {
		row, err := killRound(ctx, c, urls, l.instances, round, records, api.Filter{FunctionContext: "stable"})
		res.Rounds = append(res.Rounds, row)
		if err != nil {
			_ = stopLoad()
			return res, err
		}
		c.Logger.Info("bench kill loop: round", "round", round, "killed", row.Killed, "served again", row.Reserved, "short", row.Short, "missing", row.Missing)
	}
	err = stopLoad()
	res.Made = int(made.Load())
	if err != nil {
		return res, fmt.Errorf("the command load: %w", err)
	}
	if err := countPrepares(ctx, store, ids, &res); err != nil {
		return res, fmt.Errorf("%w; %s", err, l.unprepared(ctx, js, ids))
	}
	return res, nil
}

// unprepared describes, for an error, the first records of ids not
// prepared: their state, their partition and its holder in the plan.
func (l *killLoop) unprepared(ctx context.Context, js jetstream.JetStream, ids []string) string {
	plans, err := scheduler.OpenPartitions(ctx, js, 3)
	var plan partition.Plan
	if err == nil {
		plan, err = scheduler.PlanIn(ctx, plans)
	}
	var out []string
	for _, id := range ids {
		st, _, gerr := l.svc.Get(ctx, id)
		if gerr != nil || st.Status == aggregate.StatusFailed {
			part := plan.Of(st.Function.ProcessorName, id)
			out = append(out, fmt.Sprintf("%s (%s, retries %d, due %s, partition %s held by %q, get error %v)", id, st.Status, st.RetryState.Retries,
				time.UnixMilli(st.RetryState.NextRetryAt).UTC().Format(time.RFC3339), part, plan.Owners[part], gerr))
		}
		if len(out) == 5 {
			break
		}
	}
	return fmt.Sprintf("records not prepared: %s (plan read: %v)", strings.Join(out, "; "), err)
}

// killLoop is the kill loop's cluster, records and instances.
type killLoop struct {
	c         PartitionsConfig
	urls      string
	svc       *aggregate.Service
	zipf      *rand.Zipf // drawn by one goroutine at a time
	instances []*instance
}

// make records a failure of a function of context ctxName, the i-th,
// due now, and returns its id.
func (l *killLoop) make(ctx context.Context, ctxName string, i int) (string, error) {
	fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: ctxName, ProcessorName: fmt.Sprintf("Processor%03d", l.zipf.Uint64()), Name: "onEvent"}
	evt := fmt.Sprintf("%s-%07d", ctxName, i)
	id := aggregate.RecordID(evt, fn)
	_, err := l.svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID:     aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: ctxName, AggregateName: "order", AggregateID: "o-" + evt, TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:    fn,
		Error:       aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "boom"},
		ExecuteAt:   time.Now().UnixMilli(),
		RetrySpec:   &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 3600},
		Recoverable: aggregate.Recoverable,
	}, aggregate.Meta{Actor: "bench"})
	return id, err
}

// start runs the three instances, their passes on, and waits until each
// answers the records stable records.
func (l *killLoop) start(ctx context.Context, records int) error {
	for i := range killLoopInstances {
		in, err := spawn(ctx, l.c.Exe, l.urls, fmt.Sprintf("k%d", i), l.c.LeaseTTL, "--scheduler-initial-delay", "0s", "--scheduler-period", "1s")
		if err != nil {
			return err
		}
		l.instances = append(l.instances, in)
	}
	return wait.Until(ctx, "three instances answer every record", 50*time.Millisecond, 10*time.Minute, func() bool {
		for _, in := range l.instances {
			if n, err := in.client.Count(ctx, api.Filter{FunctionContext: "stable"}); err != nil || n != records {
				return false
			}
		}
		return true
	})
}

// load makes records of context "load" until stop is called, which
// returns the load's error; made counts them.
func (l *killLoop) load(ctx context.Context) (made *atomic.Int64, stop func() error) {
	lctx, cancel := context.WithCancel(ctx)
	made = new(atomic.Int64)
	var err error
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; lctx.Err() == nil; i++ {
			if _, e := l.make(lctx, "load", i); e != nil {
				if lctx.Err() == nil {
					err = e
				}
				return
			}
			made.Add(1)
		}
	})
	return made, func() error { cancel(); wg.Wait(); return err }
}

// killRound kills instances[round%3], checks every answer at the others
// until one answers every stable record again, starts it again and
// waits until all three answer.
func killRound(ctx context.Context, c PartitionsConfig, urls string, instances []*instance, round, records int, stable api.Filter) (KillLoopRow, error) {
	i := round % len(instances)
	victim := instances[i]
	row := KillLoopRow{Round: round, Killed: victim.name}
	victim.kill()
	killed := time.Now()
	check := func(in *instance) bool {
		n, err := in.client.Count(ctx, stable)
		switch {
		case err == nil && n == records:
			return true
		case err == nil:
			row.Short++
		case isMissing(err):
			row.Missing++
		}
		return false
	}
	err := wait.Until(ctx, "the killed instance's records served again", 20*time.Millisecond, 10*time.Minute, func() bool {
		return check(instances[(i+1)%len(instances)]) && check(instances[(i+2)%len(instances)])
	})
	if err != nil {
		return row, err
	}
	row.Reserved = time.Since(killed)
	again, err := spawn(ctx, c.Exe, urls, victim.name, c.LeaseTTL, "--scheduler-initial-delay", "0s", "--scheduler-period", "1s")
	if err != nil {
		return row, err
	}
	instances[i] = again
	err = wait.Until(ctx, "the killed instance back", 50*time.Millisecond, 10*time.Minute, func() bool {
		return check(instances[0]) && check(instances[1]) && check(instances[2])
	})
	return row, err
}

// countPrepares waits until every record of ids is prepared, then counts
// those prepared more than once.
func countPrepares(ctx context.Context, store *jsstore.Store, ids []string, res *KillLoopResult) error {
	prepared := func(id string) (int, error) {
		streams, err := store.Load(ctx, aggregate.RecordAggregate(id), 1)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, st := range streams {
			for _, ev := range st.Events {
				e, err := aggregate.DecodeEvent(ev.Name, ev.Body)
				if err != nil {
					return 0, err
				}
				if _, ok := e.(aggregate.CompensationPrepared); ok {
					n++
				}
			}
		}
		return n, nil
	}
	var loadErr error
	err := wait.Until(ctx, "every record prepared", time.Second, 10*time.Minute, func() bool {
		res.Prepared, res.Twice = 0, 0
		for _, id := range ids {
			n, err := prepared(id)
			if err != nil {
				loadErr = err
				return true
			}
			if n > 0 {
				res.Prepared++
			}
			if n > 1 {
				res.Twice++
			}
		}
		return res.Prepared == len(ids)
	})
	if loadErr != nil {
		return loadErr
	}
	return err
}

// Check returns an error if the loop found an answer short without
// saying so or a record prepared twice.
func (r KillLoopResult) Check() error {
	short := 0
	for _, row := range r.Rounds {
		short += row.Short
	}
	if short > 0 || r.Twice > 0 {
		return fmt.Errorf("the kill loop found %d answers short without saying so and %d records prepared twice", short, r.Twice)
	}
	return nil
}
