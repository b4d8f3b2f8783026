package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amends-dev/amends/internal/fakeclock"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/server"
)

const (
	t0          = int64(1_735_000_000_000)
	operatorKey = "operator-secret-0123456789"
	viewerKey   = "viewer-secret-0123456789"
)

// apiEnv is an amends HTTP API on a real JetStream, for CLI tests.
type apiEnv struct {
	url   string
	svc   *aggregate.Service
	index *projection.Index
	clock *fakeclock.Clock
	js    jetstream.JetStream
	store *jsstore.Store
	// requests counts the requests that reached the API, writes those that
	// were not GETs.
	requests, writes atomic.Int64
}

func newAPIEnv(tb testing.TB) *apiEnv {
	tb.Helper()
	js := natstest.New(tb).JetStream()
	store, err := jsstore.New(js)
	require.NoError(tb, err)
	views, err := projection.OpenViews(tb.Context(), js)
	require.NoError(tb, err)
	batches, err := server.OpenBatches(tb.Context(), js, 1)
	require.NoError(tb, err)
	e := &apiEnv{clock: fakeclock.At(t0), js: js, store: store}
	e.svc = aggregate.NewService(store, aggregate.WithClock(e.clock))
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(tb, err)
	e.index, err = projection.NewIndex(views, store, projection.WithClock(e.clock))
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = proj.Run(ctx) })
	wg.Go(func() { _ = e.index.Run(ctx) })
	tb.Cleanup(func() { cancel(); wg.Wait() })
	tokens, err := server.ParseTokens("alice:viewer:" + viewerKey + ",bob:operator:" + operatorKey)
	require.NoError(tb, err)
	ruleStore, err := rules.OpenStore(tb.Context(), js, rules.WithClock(e.clock))
	require.NoError(tb, err)
	circuits, err := circuit.OpenStore(tb.Context(), js) // the processors of these tests write with the wall clock
	require.NoError(tb, err)
	watcher := circuits.Watcher("", nil, nil)
	wg.Go(func() { _ = watcher.Run(ctx) })
	drains, err := circuit.OpenDrains(tb.Context(), js, "", 1)
	require.NoError(tb, err)
	api := server.New(server.Config{Queries: e.index, Commands: e.svc, Batches: batches, Tokens: tokens, Clock: e.clock, Quarantine: proj.Quarantine(), Rules: ruleStore,
		Circuits: &server.Circuits{Watcher: watcher, Store: circuits, Drains: drains}}).Handler()
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		if r.Method != http.MethodGet {
			e.writes.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	tb.Cleanup(h.Close)
	e.url = h.URL
	return e
}

var mailer = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "onOrderPlaced"}

func (e *apiEnv) create(tb testing.TB, i int) string {
	tb.Helper()
	evt := fmt.Sprintf("evt-%03d", i)
	id := aggregate.RecordID(evt, mailer)
	res, err := e.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:  mailer,
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"},
		ExecuteAt: t0 - 90_000,
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(tb, err)
	ctx, cancel := context.WithTimeout(tb.Context(), 20*time.Second)
	defer cancel()
	require.NoError(tb, e.index.WaitFor(ctx, id, res.Version))
	return id
}

// stored returns how many commands the event store holds: a test of
// "nothing was written".
func (e *apiEnv) stored(tb testing.TB) uint64 {
	tb.Helper()
	st, err := e.js.Stream(tb.Context(), e.store.StreamName(aggregate.Context))
	require.NoError(tb, err)
	info, err := st.Info(tb.Context())
	require.NoError(tb, err)
	return info.State.Msgs
}

// cli returns a command line bound to the API as the given token.
func (e *apiEnv) cli(token string) *cli {
	return &cli{env: map[string]string{"AMENDS_SERVER": e.url, "AMENDS_TOKEN": token}}
}
