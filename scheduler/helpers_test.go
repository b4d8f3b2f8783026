package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amends-dev/amends/internal/fakeclock"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

var t0 = time.UnixMilli(1_735_000_000_000)

// env is the control plane of one test: store, projector, index, command
// service with a fake clock, lease bucket.
type env struct {
	js     jetstream.JetStream
	store  *jsstore.Store
	svc    *aggregate.Service
	index  *projection.Index
	leases *scheduler.Leases
	clock  *fakeclock.Clock
}

func newEnv(tb testing.TB, js jetstream.JetStream, replicas int, ttl time.Duration) *env {
	tb.Helper()
	e := &env{js: js, clock: fakeclock.At(t0.UnixMilli())}
	var err error
	e.store, err = jsstore.New(js, jsstore.WithReplicas(replicas))
	require.NoError(tb, err)
	views, err := projection.OpenViews(tb.Context(), js, projection.WithBucketReplicas(replicas))
	require.NoError(tb, err)
	p, err := projection.NewProjector(js, e.store, views)
	require.NoError(tb, err)
	run(tb, p)
	e.index, err = projection.NewIndex(views, e.store, projection.WithClock(e.clock))
	require.NoError(tb, err)
	run(tb, e.index)
	e.svc = aggregate.NewService(e.store, aggregate.WithClock(e.clock))
	e.leases, err = scheduler.OpenLeases(tb.Context(), js, scheduler.WithLeaseTTL(ttl), scheduler.WithLeaseReplicas(replicas))
	require.NoError(tb, err)
	return e
}

// run starts r and stops it at cleanup or when stop is called, failing
// the test if Run returns an error.
func run(tb testing.TB, r interface{ Run(context.Context) error }) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("Run returned %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

var fn = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "OrderProjector", Name: "onEvent"}

// create records a failure at the clock's time with a 1 s backoff and
// returns the record id and version.
func (e *env) create(tb testing.TB, i int, rec aggregate.Recoverability) (string, uint64) {
	tb.Helper()
	return e.createOf(tb, i, fn, rec)
}

// createOf is create for a failure of function f.
func (e *env) createOf(tb testing.TB, i int, f aggregate.FunctionInfo, rec aggregate.Recoverability) (string, uint64) {
	tb.Helper()
	evt := fmt.Sprintf("evt-%05d", i)
	id := aggregate.RecordID(evt, f)
	r, err := e.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:     aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
		Function:    f,
		Error:       aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "boom"},
		ExecuteAt:   e.clock.Now().UnixMilli(),
		RetrySpec:   &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 60},
		Recoverable: rec,
	}, aggregate.Meta{Actor: "test"})
	require.NoError(tb, err)
	return id, r.Version
}

// indexed waits until the index has every record at its version.
func (e *env) indexed(tb testing.TB, versions map[string]uint64) {
	tb.Helper()
	for id, v := range versions {
		ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
		require.NoError(tb, e.index.WaitFor(ctx, id, v), "index has %s v%d", id, v)
		cancel()
	}
}

// prepares returns, per record, the due times (retries and nextRetryAt
// before the prepare) of its CompensationPrepared events, from the store.
func (e *env) prepares(tb testing.TB, id string) []string {
	tb.Helper()
	streams, err := e.store.Load(tb.Context(), aggregate.RecordAggregate(id), 1)
	require.NoError(tb, err)
	var out []string
	s := aggregate.State{ID: id}
	for _, st := range streams {
		for _, ev := range st.Events {
			event, err := aggregate.DecodeEvent(ev.Name, ev.Body)
			require.NoError(tb, err)
			if _, ok := event.(aggregate.CompensationPrepared); ok {
				out = append(out, fmt.Sprintf("%d@%d by %s", s.RetryState.Retries, s.RetryState.NextRetryAt, st.Headers[aggregate.HeaderActor]))
			}
			s = aggregate.Evolve(s, event)
		}
	}
	return out
}

func (e *env) scheduler(tb testing.TB, exec scheduler.Executor, opts ...scheduler.Option) *scheduler.Scheduler {
	tb.Helper()
	s, err := scheduler.New(e.index, exec, e.leases, append([]scheduler.Option{scheduler.WithClock(e.clock)}, opts...)...)
	require.NoError(tb, err)
	return s
}
