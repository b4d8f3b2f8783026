package projection_test

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
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
)

// t0 is the fake clock's start: every record is created at it.
var t0 = time.UnixMilli(1_735_000_000_000)

// env is one test's JetStream, event store, views bucket and command
// service, all on a fresh in-process server.
type env struct {
	srv   *natstest.Server
	js    jetstream.JetStream
	store *jsstore.Store
	views *projection.Views
	svc   *aggregate.Service
	clock *fakeclock.Clock
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	srv := natstest.New(tb)
	e := &env{srv: srv, clock: fakeclock.At(t0.UnixMilli())}
	e.connect(tb)
	return e
}

// connect (re)opens the client side on e.srv.
func (e *env) connect(tb testing.TB) {
	tb.Helper()
	e.js = e.srv.JetStream()
	var err error
	e.store, err = jsstore.New(e.js)
	require.NoError(tb, err)
	e.views, err = projection.OpenViews(tb.Context(), e.js)
	require.NoError(tb, err)
	e.svc = aggregate.NewService(e.store, aggregate.WithClock(e.clock))
}

// run starts a long-running component and stops it, waiting for Run to
// return, at cleanup (or when the returned stop is called).
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

func (e *env) projector(tb testing.TB, opts ...projection.ProjectorOption) *projection.Projector {
	tb.Helper()
	p, err := projection.NewProjector(e.js, e.store, e.views, opts...)
	require.NoError(tb, err)
	return p
}

func (e *env) index(tb testing.TB, opts ...projection.IndexOption) *projection.Index {
	tb.Helper()
	ix, err := projection.NewIndex(e.views, e.store, append([]projection.IndexOption{projection.WithClock(e.clock)}, opts...)...)
	require.NoError(tb, err)
	return ix
}

var fnA = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "OrderProjector", Name: "onEvent"}

// create records a failure of event evt in function fn and returns the
// record id.
func (e *env) create(tb testing.TB, evt string, fn aggregate.FunctionInfo, code string, spec *aggregate.RetrySpec) string {
	tb.Helper()
	id := aggregate.RecordID(evt, fn)
	_, err := e.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt, TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:  fn,
		Error:     aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "boom"},
		ExecuteAt: e.clock.Now().UnixMilli(),
		RetrySpec: spec,
	}, aggregate.Meta{Actor: "test"})
	require.NoError(tb, err)
	return id
}

func (e *env) exec(tb testing.TB, id string, c aggregate.Command) aggregate.Result {
	tb.Helper()
	r, err := e.svc.Execute(tb.Context(), id, c, aggregate.Meta{Actor: "test"})
	require.NoError(tb, err, "%s on %s", c.CommandName(), id)
	return r
}

// waitViews waits until every record in want has its view at the version
// given.
func (e *env) waitViews(tb testing.TB, want map[string]uint64) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		for id, v := range want {
			got, err := projection.GetView(tb.Context(), e.views, id)
			if err != nil || got.Version != v {
				return false
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, "views at %v", want)
}

func evt(i int) string { return fmt.Sprintf("evt-%05d", i) }

// drained waits until the projector's durable consumer has nothing
// pending or unacknowledged: everything was projected and acked.
func (e *env) drained(tb testing.TB) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		c, err := e.js.Consumer(tb.Context(), e.store.StreamName(aggregate.Context), projection.DefaultDurable)
		if err != nil {
			return false
		}
		ci, err := c.Info(tb.Context())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, 30*time.Second, 5*time.Millisecond, "the projector acked everything")
}

// handled waits until p counts n streams projected, rebuilt or skipped:
// p counts a stream after its view is written, so the count may trail
// the bucket a moment.
func handled(tb testing.TB, p *projection.Projector, n uint64) projection.ProjectorStats {
	tb.Helper()
	var st projection.ProjectorStats
	require.Eventually(tb, func() bool {
		st = p.Stats()
		return st.Projected+st.Rebuilt+st.Skipped >= n
	}, 30*time.Second, 5*time.Millisecond, "the projector handled %d streams", n)
	return st
}

// keyOf returns the key of record id's view: where the bucket holds its
// last change, or, for a record the bucket never held, its key under
// fnA's processor (the processor of the tests' records).
func keyOf(t testing.TB, views *projection.Views, id string) string {
	t.Helper()
	if e, err := views.Lookup(t.Context(), id); err == nil {
		return e.Key()
	}
	key, err := projection.ViewKey(fnA.ProcessorName, id)
	require.NoError(t, err)
	return key
}

// wrapViews returns the views bucket read through kv, a wrapper of e's.
func wrapViews(t testing.TB, e *env, kv jetstream.KeyValue) *projection.Views {
	t.Helper()
	views, err := projection.NewViews(e.js, kv)
	require.NoError(t, err)
	return views
}
