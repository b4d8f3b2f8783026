package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amends-dev/amends/internal/fakeclock"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

const (
	ctxName = "shop"
	t0      = int64(1735000000000)
)

var (
	// waitFor bounds every wait for something that normally takes
	// milliseconds: generous, so it holds on a busy machine.
	waitFor = 30 * time.Second
	tick    = 5 * time.Millisecond
)

// sleeps records the waits asked of it and returns at once.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) All() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// env is one test's JetStream, store, record service and recorder.
type env struct {
	t      testing.TB
	srv    *natstest.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	store  *jsstore.Store
	svc    *aggregate.Service
	rec    *recorder.Recorder
	clock  *fakeclock.Clock
	sleeps *sleeps
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv := natstest.New(t)
	e := &env{t: t, srv: srv, clock: fakeclock.At(t0), sleeps: &sleeps{}}
	e.connect()
	return e
}

// connect (re)connects to the server and builds store, service, recorder.
func (e *env) connect() {
	e.t.Helper()
	e.nc, e.js = e.srv.Connect()
	var err error
	e.store, err = jsstore.New(e.js)
	require.NoError(e.t, err)
	require.NoError(e.t, e.store.Provision(e.t.Context(), ctxName, aggregate.Context))
	e.svc = aggregate.NewService(e.store, aggregate.WithClock(e.clock))
	e.rec, err = recorder.New(e.svc, recorder.WithSleeper(e.sleeps.Sleep), recorder.WithClock(e.clock))
	require.NoError(e.t, err)
}

// processor returns a Processor of ctxName wired to the env's recorder.
func (e *env) processor(opts ...processor.Option) *processor.Processor {
	e.t.Helper()
	base := []processor.Option{
		processor.WithRecorder(e.rec), processor.WithRecords(e.svc),
		processor.WithClock(e.clock), processor.WithSleeper(e.sleeps.Sleep),
		processor.WithLogger(quietLogger()), processor.WithNakDelay(10 * time.Millisecond),
	}
	p, err := processor.New(e.js, e.store, ctxName, append(base, opts...)...)
	require.NoError(e.t, err)
	return p
}

func quietLogger() *slog.Logger {
	if os.Getenv("AMENDS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// run starts p.Run and stops it at the end of the test. It returns a
// function that stops p and waits for Run to return, failing the test if
// Run returned an error.
func run(t testing.TB, p *processor.Processor) (stop func()) {
	t.Helper()
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { errc <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(waitFor):
				t.Errorf("Run did not return within %s of Stop", waitFor)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-p.Ready():
	case err := <-errc:
		t.Fatalf("Run returned %v before it was ready", err)
	case <-time.After(waitFor):
		t.Fatalf("processor not ready within %s", waitFor)
	}
	return stop
}

// orderID is the aggregate id of order n.
func order(id string) eventstore.AggregateID {
	return eventstore.AggregateID{Context: ctxName, Type: "order", ID: id}
}

// emit appends one stream of the given events (name → body) to a at
// version v (1-based) and returns the committed stream.
func (e *env) emit(a eventstore.AggregateID, v uint64, events ...event) eventstore.Stream {
	e.t.Helper()
	st := eventstore.Stream{ID: uuid.NewString(), Aggregate: a, CommandID: uuid.NewString(), CreateTime: t0}
	for _, ev := range events {
		b, err := json.Marshal(ev.body)
		require.NoError(e.t, err)
		st.Events = append(st.Events, eventstore.Event{ID: uuid.NewString(), Name: ev.name, Body: b})
	}
	c, err := e.store.Append(context.Background(), st, v-1)
	require.NoError(e.t, err)
	return c
}

type event struct {
	name string
	body any
}

func ev(name string, body any) event { return event{name, body} }

// counter is a handler that counts calls per event id and fails while
// failing returns an error.
type counter struct {
	mu      sync.Mutex
	calls   map[string]int
	total   atomic.Int64
	failing atomic.Pointer[error]
	comps   []processor.Compensation
}

func newCounter() *counter { return &counter{calls: make(map[string]int)} }

func (c *counter) failWith(err error) { c.failing.Store(&err) }
func (c *counter) succeed()           { c.failing.Store(nil) }

func (c *counter) handle(ctx context.Context, d *processor.Delivery) error {
	c.mu.Lock()
	c.calls[d.Event.ID]++
	if comp, ok := processor.CompensationFrom(ctx); ok {
		c.comps = append(c.comps, comp)
	}
	c.mu.Unlock()
	c.total.Add(1)
	if err := c.failing.Load(); err != nil {
		return *err
	}
	return nil
}

func (c *counter) count(eventID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[eventID]
}

func (c *counter) compensations() []processor.Compensation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]processor.Compensation(nil), c.comps...)
}

// fn is a Function of the order aggregate.
func fn(proc, name string, events ...string) processor.Function {
	return processor.Function{Processor: proc, Name: name, AggregateTypes: []string{"order"}, Events: events}
}

// info is the FunctionInfo of fn.
func info(proc, name string) aggregate.FunctionInfo {
	return aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: ctxName, ProcessorName: proc, Name: name}
}

// record returns the record of event eventID failing in f; zero State if none.
func (e *env) record(eventID string, f aggregate.FunctionInfo) aggregate.State {
	e.t.Helper()
	st, _, err := e.svc.Get(context.Background(), aggregate.RecordID(eventID, f))
	if err != nil {
		require.ErrorIs(e.t, err, aggregate.ErrNotFound)
		return aggregate.State{}
	}
	return st
}

// recordCount returns how many ExecutionFailed aggregates exist.
func (e *env) recordCount() int {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), e.store.StreamName(aggregate.Context))
	require.NoError(e.t, err)
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(e.store.FilterSubject(aggregate.Context, aggregate.AggregateType)))
	require.NoError(e.t, err)
	n := 0
	for range info.State.Subjects {
		n++
	}
	return n
}

// acked reports whether the durable on stream has acked every message up
// to sequence seq and holds none un-acked.
func (e *env) acked(durable, stream string, seq uint64) bool {
	e.t.Helper()
	c, err := e.js.Consumer(context.Background(), stream, durable)
	if err != nil {
		return false
	}
	info, err := c.Info(context.Background())
	if err != nil {
		return false
	}
	return info.AckFloor.Stream >= seq && info.NumAckPending == 0
}

// inFlight returns how many messages processor proc's durable has
// delivered and not yet acked, once it has delivered every message; -1
// before that.
func (e *env) inFlight(proc string) int {
	e.t.Helper()
	c, err := e.js.Consumer(context.Background(), e.store.StreamName(ctxName), processor.DurableName(ctxName, proc))
	if err != nil {
		return -1
	}
	info, err := c.Info(context.Background())
	if err != nil || info.NumPending > 0 {
		return -1
	}
	return info.NumAckPending
}

// settled reports whether processor proc's durable has acked everything up
// to the context stream's last message.
func (e *env) settled(proc string) bool {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), e.store.StreamName(ctxName))
	require.NoError(e.t, err)
	info, err := s.Info(context.Background())
	require.NoError(e.t, err)
	return e.acked(processor.DurableName(ctxName, proc), e.store.StreamName(ctxName), info.State.LastSeq)
}

var errBoom = fmt.Errorf("boom")

func itoa(n uint64) string { return fmt.Sprint(n) }
