package dashboard_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/dashboard"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/examples/orders"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/server"
)

const (
	viewerToken   = "viewer-token-0123456789abcdef"
	operatorToken = "operator-token-0123456789abcdef"
)

// stack is what `amends serve` runs, on a real in-process JetStream: the
// example orders service (its processor replays prepared records), the
// projector and index, the API with the dashboard, over TCP loopback.
type stack struct {
	mail  *orders.FlakyServer
	app   *orders.App
	index *projection.Index
	svc   *aggregate.Service
	http  *httptest.Server
	quar  *quarantine.Quarantine
	// circuits are the functions' circuits the processor and the API share.
	circuits *circuit.Store
	// greylisted and full are the record ids of the orders placed while
	// the mail server greylisted, or had a full mailbox (unrecoverable).
	greylisted, full []string
}

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func background(tb testing.TB, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := run(ctx); err != nil && ctx.Err() == nil {
			tb.Errorf("run: %v", err)
		}
	})
	tb.Cleanup(func() { cancel(); wg.Wait() })
}

var mailer = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: orders.Context, ProcessorName: "Mailer", Name: "confirmOrder"}

// stackOption changes a stack before it serves: its server's config, or
// TLS.
type stackOption func(*stackSetup)

type stackSetup struct {
	tb   testing.TB
	cfg  *server.Config
	dash *dashboard.Config
	js   jetstream.JetStream
	// tls, if set, serves HTTPS with it.
	tls *tls.Config
}

// newStack starts the stack with greylisted orders whose mails failed
// (recoverable) and full ones (unrecoverable). With tokens, it has a
// viewer and an operator token; without, it is the loopback local mode.
func newStack(tb testing.TB, greylisted, full int, tokens bool, opts ...stackOption) *stack {
	tb.Helper()
	ctx := tb.Context()
	_, js := natstest.New(tb).Connect()
	s := &stack{mail: orders.NewFlakyServer()}
	clock := aggregate.ClockFunc(time.Now)
	app, err := orders.New(ctx, js, orders.Config{
		Mail: s.mail, Clock: clock,
		// Circuits off: the fixture's failures (each with its immediate
		// retries, which do not wait) would open the mailer's circuit, and
		// the later orders' records would read CircuitOpen.
		ProcessorOpts:   []processor.Option{processor.WithSleeper(noWait), processor.WithLogger(quiet()), processor.WithCircuitPolicy(circuit.Policy{Off: true})},
		RecorderOptions: []recorder.Option{recorder.WithSleeper(noWait)},
	})
	require.NoError(tb, err)
	s.app = app
	background(tb, app.Processor.Run)
	<-app.Processor.Ready()

	store, err := jsstore.New(js)
	require.NoError(tb, err)
	views, err := projection.OpenViews(ctx, js)
	require.NoError(tb, err)
	proj, err := projection.NewProjector(js, store, views, projection.WithLogger(quiet()))
	require.NoError(tb, err)
	s.index, err = projection.NewIndex(views, store)
	require.NoError(tb, err)
	background(tb, proj.Run)
	background(tb, s.index.Run)
	batches, err := server.OpenBatches(ctx, js, 1)
	require.NoError(tb, err)
	s.svc = aggregate.NewService(store)
	dcfg := dashboard.Config{Index: s.index, Events: store, Changes: views, Logger: quiet(), Refresh: time.Second, Debounce: 50 * time.Millisecond}
	s.quar = proj.Quarantine()
	s.circuits, err = circuit.OpenStore(ctx, js)
	require.NoError(tb, err)
	watcher := s.circuits.Watcher("", quiet(), nil)
	background(tb, watcher.Run)
	cfg := server.Config{Queries: s.index, Commands: s.svc, Batches: batches, Logger: quiet(), Quarantine: s.quar,
		Circuits: &server.Circuits{Watcher: watcher, Store: s.circuits}}
	if tokens {
		cfg.Tokens, err = server.ParseTokens("alice:viewer:" + viewerToken + "\nbob:operator:" + operatorToken)
		require.NoError(tb, err)
	}
	setup := stackSetup{tb: tb, cfg: &cfg, dash: &dcfg, js: js}
	for _, o := range opts {
		o(&setup)
	}
	d, err := dashboard.New(dcfg)
	require.NoError(tb, err)
	background(tb, d.Run)
	cfg.Dashboard = d
	s.http = httptest.NewUnstartedServer(server.New(cfg).Handler())
	if setup.tls != nil {
		s.http.TLS = setup.tls
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	tb.Cleanup(s.http.Close)

	place := func(prefix string, n int, fail error) []string {
		s.mail.FailWith(fail)
		var ids []string
		for i := range n {
			st, err := app.Orders.Place(ctx, fmt.Sprintf("%s-%d", prefix, i+1), orders.Placed{
				Customer: "Ada", Email: fmt.Sprintf("ada+%s%d@example.com", prefix, i+1), Lines: []orders.Line{{SKU: "tea", Qty: i + 1}}})
			require.NoError(tb, err)
			ids = append(ids, aggregate.RecordID(st.Events[0].ID, mailer))
		}
		// The mailer sees the orders later: keep the mail server failing
		// this way until every one of them is recorded.
		require.Eventually(tb, func() bool {
			for _, id := range ids {
				if _, err := s.index.Get(ctx, id); err != nil {
					return false
				}
			}
			return true
		}, 30*time.Second, 10*time.Millisecond, "every failed mail is recorded and indexed")
		return ids
	}
	s.greylisted = place("grey", greylisted, orders.ErrGreylisted)
	s.full = place("full", full, orders.ErrMailboxFull)
	s.mail.FailWith(nil)
	return s
}

// withStack records, through the record service, a failure of the mailer
// on a new order with a cockroachdb/errors stack trace (the mailer's own
// errors carry none), as a recorder does for such an error; it returns
// the record id.
func (s *stack) withStack(tb testing.TB) string {
	tb.Helper()
	ctx := tb.Context()
	st, err := s.app.Orders.Place(ctx, "crash-1", orders.Placed{Customer: "Ada", Email: "ada+crash@example.com", Lines: []orders.Line{{SKU: "cup", Qty: 3}}})
	require.NoError(tb, err)
	id := aggregate.RecordID(st.Events[0].ID, mailer)
	cause := crdb.Wrap(crdb.New("read tcp 10.0.0.7:41822->10.0.0.9:25: connection reset by peer"), "smtp DATA to mx.example.com")
	details := recorder.Details(cause)
	details.ErrorCode = "ConnectionReset"
	_, err = s.svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID: aggregate.EventID{ID: st.Events[0].ID, Version: st.Version, Seq: st.Seq,
			AggregateID: aggregate.WireAggregateID{ContextName: st.Aggregate.Context, AggregateName: st.Aggregate.Type, AggregateID: st.Aggregate.ID, TenantID: aggregate.DefaultTenantID}},
		Function: mailer, Error: details, ExecuteAt: time.Now().UnixMilli(), Recoverable: aggregate.Recoverable,
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(tb, err)
	require.Eventually(tb, func() bool { _, err := s.index.Get(ctx, id); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NotEmpty(tb, details.StackTrace)
	return id
}

// succeed prepares record id and waits until its replay has succeeded.
func (s *stack) succeed(tb testing.TB, id string) {
	tb.Helper()
	_, err := s.svc.Execute(tb.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
	require.NoError(tb, err)
	require.Eventually(tb, func() bool { return s.status(tb, id) == aggregate.StatusSucceeded }, 30*time.Second, 10*time.Millisecond)
}

// status is a record's status in the index.
func (s *stack) status(tb testing.TB, id string) aggregate.Status {
	tb.Helper()
	v, err := s.index.Get(tb.Context(), id)
	require.NoError(tb, err)
	return v.State.Status
}

// newDataServer serves d's data without authentication, for tests of the
// dashboard alone.
func newDataServer(tb testing.TB, d *dashboard.Dashboard) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(d.ServeData))
	tb.Cleanup(srv.Close)
	return srv.URL
}
