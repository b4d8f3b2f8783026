package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

const (
	t0          = int64(1_735_000_000_000)
	viewerKey   = "viewer-secret-0123456789"
	operatorKey = "operator-secret-0123456789"
)

// env is a server on a real JetStream, with the projector and index
// running, and tokens for a viewer (alice) and an operator (bob).
type env struct {
	svc     *aggregate.Service
	index   *projection.Index
	clock   *fakeclock.Clock
	http    *httptest.Server
	handler http.Handler
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  string // the event store's stream of the records
	cfg     server.Config
	ready   *atomic.Pointer[error]
	// indexDone is closed when the index's Run returns (its watch stopped).
	indexDone chan struct{}
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	nc, js := natstest.New(tb).Connect()
	store, err := jsstore.New(js)
	require.NoError(tb, err)
	views, err := projection.OpenViews(tb.Context(), js)
	require.NoError(tb, err)
	batches, err := server.OpenBatches(tb.Context(), js, 1)
	require.NoError(tb, err)
	e := &env{clock: fakeclock.At(t0), nc: nc, js: js, stream: store.StreamName(aggregate.Context), indexDone: make(chan struct{}), ready: new(atomic.Pointer[error])}
	e.svc = aggregate.NewService(store, aggregate.WithClock(e.clock))
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(tb, err)
	e.index, err = projection.NewIndex(views, store, projection.WithClock(e.clock))
	require.NoError(tb, err)
	runInBackground(tb, proj.Run)
	runInBackground(tb, func(ctx context.Context) error {
		defer close(e.indexDone)
		return e.index.Run(ctx)
	})
	tokens, err := server.ParseTokens("alice:viewer:" + viewerKey + "\nbob:operator:" + operatorKey)
	require.NoError(tb, err)
	e.cfg = server.Config{
		Queries: e.index, Commands: e.svc, Batches: batches, Tokens: tokens, Clock: e.clock,
		AllowedHosts: []string{"amends.test"},
		Ready: func() error {
			if p := e.ready.Load(); p != nil {
				return *p
			}
			return nil
		},
	}
	e.handler = server.New(e.cfg).Handler()
	e.http = httptest.NewServer(e.handler)
	tb.Cleanup(e.http.Close)
	return e
}

// with returns a copy of e whose server has a changed config.
func (e *env) with(tb testing.TB, change func(*server.Config)) *env {
	tb.Helper()
	c := *e
	change(&c.cfg)
	c.handler = server.New(c.cfg).Handler()
	c.http = httptest.NewServer(c.handler)
	tb.Cleanup(c.http.Close)
	return &c
}

// lastSeq is the last sequence of the records' stream: a request that
// writes nothing leaves it as it was.
func (e *env) lastSeq(tb testing.TB) uint64 {
	tb.Helper()
	st, err := e.js.Stream(tb.Context(), e.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0
	}
	require.NoError(tb, err)
	info, err := st.Info(tb.Context())
	require.NoError(tb, err)
	return info.State.LastSeq
}

// healthy fails the test if the NATS connection or the index's watch went
// down.
func (e *env) healthy(tb testing.TB) {
	tb.Helper()
	require.True(tb, e.nc.IsConnected(), "the NATS connection is %v, want connected", e.nc.Status())
	select {
	case <-e.indexDone:
		tb.Fatal("the index's watch of the views bucket stopped")
	default:
	}
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

var fn = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "onOrderPlaced"}

// create records a failure and waits until the index has it.
func (e *env) create(tb testing.TB, i int, spec *aggregate.RetrySpec) string {
	tb.Helper()
	evt := fmt.Sprintf("evt-%04d", i)
	id := aggregate.RecordID(evt, fn)
	res, err := e.svc.Execute(tb.Context(), id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt, TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:  fn,
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"},
		ExecuteAt: e.clock.Now().UnixMilli() + int64(i),
		RetrySpec: spec,
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(tb, err)
	e.wait(tb, id, res.Version)
	return id
}

func (e *env) wait(tb testing.TB, id string, version uint64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 20*time.Second)
	defer cancel()
	require.NoError(tb, e.index.WaitFor(ctx, id, version))
}

// response is a decoded reply.
type response struct {
	status int
	body   []byte
	header http.Header
}

func (r response) json(tb testing.TB, v any) {
	tb.Helper()
	require.NoError(tb, json.Unmarshal(r.body, v), "body: %s", r.body)
}

func (r response) apiError(tb testing.TB) api.Error {
	tb.Helper()
	var e api.Error
	r.json(tb, &e)
	return e
}

// do sends a request with the given token ("" for none) and JSON body (nil
// for none, sent as Content-Type application/json), with the given header
// pairs (which may replace the Content-Type).
func (e *env) do(tb testing.TB, method, path, token string, body any, header ...string) response {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(tb, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, e.http.URL+path, rd)
	require.NoError(tb, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // the client sends req.Host, not a Host in Header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return response{status: resp.StatusCode, body: data, header: resp.Header}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
