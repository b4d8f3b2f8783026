package retention_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

var t0 = time.UnixMilli(1_735_000_000_000)

// env is the control plane of one test: store, index, command service
// with a fake clock, and the scheduler's lease bucket (for the tests of
// a sweeper run by a scheduler).
type env struct {
	js     jetstream.JetStream
	store  *jsstore.Store
	svc    *aggregate.Service
	index  *projection.Index
	leases *scheduler.Leases
	clock  *fakeclock.Clock
}

// run starts r and stops it at cleanup, failing the test if Run returns
// an error.
func run(tb testing.TB, r interface{ Run(context.Context) error }) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	tb.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("Run returned %v", err)
			}
		})
	})
}

var fn = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "OrderProjector", Name: "onEvent"}

// create records a failure of event i at the clock's time and returns the
// record id and version.
func (e *env) create(tb testing.TB, i int, rec aggregate.Recoverability) (string, uint64) {
	tb.Helper()
	evt := fmt.Sprintf("evt-%05d", i)
	id := aggregate.RecordID(evt, fn)
	r, err := e.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:     aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
		Function:    fn,
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

// scheduler returns a scheduler of the env's index and leases.
func (e *env) scheduler(tb testing.TB, exec scheduler.Executor, opts ...scheduler.Option) *scheduler.Scheduler {
	tb.Helper()
	s, err := scheduler.New(e.index, exec, e.leases, append([]scheduler.Option{scheduler.WithClock(e.clock)}, opts...)...)
	require.NoError(tb, err)
	return s
}
