package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

const (
	t0          = int64(1_735_000_000_000)
	operatorKey = "operator-secret-0123456789"
)

// stack is a real server: JetStream, the event store, the projector and
// index, and the HTTP API, with an operator token.
type stack struct {
	svc   *aggregate.Service
	index *projection.Index
	clock *fakeclock.Clock
	cfg   server.Config
	url   string
}

func newStack(tb testing.TB) *stack {
	tb.Helper()
	_, js := natstest.New(tb).Connect()
	store, err := jsstore.New(js)
	require.NoError(tb, err)
	views, err := projection.OpenViews(tb.Context(), js)
	require.NoError(tb, err)
	batches, err := server.OpenBatches(tb.Context(), js, 1)
	require.NoError(tb, err)
	s := &stack{clock: fakeclock.At(t0)}
	s.svc = aggregate.NewService(store, aggregate.WithClock(s.clock))
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(tb, err)
	s.index, err = projection.NewIndex(views, store, projection.WithClock(s.clock))
	require.NoError(tb, err)
	runInBackground(tb, proj.Run)
	runInBackground(tb, s.index.Run)
	tokens, err := server.ParseTokens("bob:operator:" + operatorKey)
	require.NoError(tb, err)
	s.cfg = server.Config{Queries: s.index, Commands: s.svc, Batches: batches, Tokens: tokens, Clock: s.clock}
	s.serve(tb)
	return s
}

// serve (re)starts the HTTP server on s.cfg.
func (s *stack) serve(tb testing.TB) {
	srv := httptest.NewServer(server.New(s.cfg).Handler())
	tb.Cleanup(srv.Close)
	s.url = srv.URL
}

func (s *stack) client(tb testing.TB) *client.Client {
	tb.Helper()
	c, err := client.New(s.url, operatorKey, nil)
	require.NoError(tb, err)
	return c
}

func runInBackground(tb testing.TB, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := run(ctx); err != nil && ctx.Err() == nil {
			tb.Errorf("run: %v", err)
		}
	})
	tb.Cleanup(func() { cancel(); wg.Wait() })
}

var mailer = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "onOrderPlaced"}

// create records failure i of fn and waits until the index has it.
func (s *stack) create(tb testing.TB, i int, fn aggregate.FunctionInfo, spec *aggregate.RetrySpec) string {
	tb.Helper()
	evt := fmt.Sprintf("evt-%04d", i)
	id := aggregate.RecordID(evt, fn)
	res, err := s.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateIDOf(eventstore.AggregateID{Context: "order", Type: "order", ID: "o-" + evt}), Version: 1},
		Function:  fn,
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"},
		ExecuteAt: s.clock.Now().UnixMilli() + int64(i),
		RetrySpec: spec,
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(tb, err)
	s.wait(tb, id, res.Version)
	return id
}

func (s *stack) wait(tb testing.TB, id string, version uint64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	require.NoError(tb, s.index.WaitFor(ctx, id, version))
}
