package processor_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// gateSleeper holds every immediate retry's wait until the test opens the
// gate, and counts the waits that began.
type gateSleeper struct {
	open    chan struct{}
	waiting atomic.Int64
}

func newGate() *gateSleeper { return &gateSleeper{open: make(chan struct{})} }

func (g *gateSleeper) Sleep(ctx context.Context, _ time.Duration) error {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// calls records the order of a handler's calls: "aggregate/version".
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	c.log = append(c.log, s)
	c.mu.Unlock()
}

func (c *calls) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

func (c *calls) has(s string) bool {
	for _, x := range c.all() {
		if x == s {
			return true
		}
	}
	return false
}

// While a function waits for an immediate retry of an event of aggregate
// A, on a processor of one lane: its sibling gets A's event and A's later
// events at once, the function itself gets another aggregate's events at
// once, and A's later events reach it only after the retry, in order.
func TestAWaitingRetryDelaysOnlyItsFunctionOnItsAggregate(t *testing.T) {
	e := newEnv(t)
	gate := newGate()
	p := e.processor(processor.WithConcurrency(1), processor.WithSleeper(gate.Sleep))
	var send, audit calls
	var failA atomic.Bool
	failA.Store(true)
	require.NoError(t, p.Register(fn("Mailer", "send"), func(_ context.Context, d *processor.Delivery) error {
		send.add(d.Stream.Aggregate.ID + "/" + itoa(d.Stream.Version))
		if d.Stream.Aggregate.ID == "A" && failA.Load() {
			return failure.Recoverable(errBoom)
		}
		return nil
	}))
	require.NoError(t, p.Register(fn("Mailer", "audit"), func(_ context.Context, d *processor.Delivery) error {
		audit.add(d.Stream.Aggregate.ID + "/" + itoa(d.Stream.Version))
		return nil
	}))
	run(t, p)
	e.emit(order("A"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return gate.waiting.Load() == 1 }, waitFor, tick, "send waits for its retry of A/1")
	e.emit(order("A"), 2, ev("order_paid", struct{}{}))
	e.emit(order("B"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return audit.has("A/2") && audit.has("B/1") && send.has("B/1") }, waitFor, tick,
		"audit got A/1, A/2 and B/1, send got B/1, while send waits on A/1")
	assert.Equal(t, []string{"A/1", "B/1"}, send.all(), "A/2 waits for send's retry of A/1")
	assert.Equal(t, []string{"A/1", "A/2", "B/1"}, audit.all())
	assert.Equal(t, uint64(1), p.FunctionMetrics("Mailer", "send").Retries.Load())

	failA.Store(false)
	close(gate.open)
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, []string{"A/1", "B/1", "A/1", "A/2"}, send.all(), "the retry, then A/2")
	assert.Equal(t, []string{"A/1", "A/2", "B/1"}, audit.all(), "audit never ran again")
	assert.Equal(t, uint64(0), p.Metrics().Naked.Load())
	assert.Equal(t, 0, e.recordCount(), "the retry succeeded: no record")
}

// A message waiting on its functions' retries, and messages queued behind
// a long handler on the same lane, keep their lease: none is redelivered
// while they wait, however long, and no function runs twice.
func TestWaitingMessagesAreNotRedelivered(t *testing.T) {
	// Heartbeats go out every third of AckWait; 2 s leaves over a second
	// of slack for a late heartbeat on a busy machine.
	const ackWait = 2 * time.Second
	e := newEnv(t)
	gate := newGate()
	p := e.processor(processor.WithConcurrency(1), processor.WithAckWait(ackWait), processor.WithSleeper(gate.Sleep))
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	slow, retried, other := newCounter(), newCounter(), newCounter()
	retried.failWith(failure.Recoverable(errBoom))
	require.NoError(t, p.Register(fn("Mailer", "wait", "order_shipped"), func(ctx context.Context, d *processor.Delivery) error {
		_ = slow.handle(ctx, d)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	require.NoError(t, p.Register(fn("Mailer", "send", "order_placed"), retried.handle))
	require.NoError(t, p.Register(fn("Mailer", "audit", "order_placed"), other.handle))
	run(t, p)
	e.emit(order("r-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return gate.waiting.Load() == 1 }, waitFor, tick, "send waits for its retry")
	e.emit(order("s-1"), 1, ev("order_shipped", struct{}{}))
	require.Eventually(t, func() bool { return slow.total.Load() == 1 }, waitFor, tick)
	for i := range 3 { // queued behind the slow handler on the only lane
		e.emit(order("q-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
	}
	require.Never(t, func() bool { return p.Metrics().Delivered.Load() > 5 }, 3*ackWait, 20*time.Millisecond,
		"nothing redelivered while it waits")
	retried.succeed()
	close(gate.open)
	unblock()
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, uint64(5), p.Metrics().Delivered.Load(), "each delivered once")
	assert.Equal(t, int64(4), other.total.Load(), "audit ran once per order_placed")
	assert.Equal(t, int64(5), retried.total.Load(), "send: the first event twice (a retry), the others once")
}

// flakyRecorder fails to record the first failure of function name, then
// records as its recorder does.
type flakyRecorder struct {
	processor.FailureRecorder
	name   string
	failed atomic.Bool
}

func (r *flakyRecorder) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	if x.Err != nil && x.Function != nil && x.Function.Name == r.name && r.failed.CompareAndSwap(false, true) {
		return processor.OutcomeRecordingFailed, errBoom
	}
	return r.FailureRecorder.Record(ctx, x)
}

// A message nak'ed because one function's failure could not be recorded
// comes back to that function only: its siblings that succeeded are not
// called again.
func TestAComebackRunsOnlyWhatIsNotDone(t *testing.T) {
	e := newEnv(t)
	rec, err := recorder.New(e.svc, recorder.WithSleeper(e.sleeps.Sleep), recorder.WithClock(e.clock))
	require.NoError(t, err)
	p := e.processor(processor.WithRecorder(&flakyRecorder{FailureRecorder: rec, name: "send"}), processor.WithImmediateRetry(processor.Retry{}))
	send, audit, post := newCounter(), newCounter(), newCounter()
	send.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "send"), send.handle))
	require.NoError(t, p.Register(fn("Mailer", "audit"), audit.handle))
	require.NoError(t, p.Register(fn("Ledger", "post"), post.handle))
	run(t, p)
	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	id := st.Events[0].ID
	require.Eventually(t, func() bool { return e.settled("Mailer") && e.settled("Ledger") }, waitFor, tick)
	assert.Equal(t, 2, send.count(id), "send again after its recording failed")
	assert.Equal(t, 1, audit.count(id), "audit, done, not again")
	assert.Equal(t, 1, post.count(id))
	assert.Equal(t, uint64(1), p.FunctionMetrics("Mailer", "audit").Skipped.Load())
	assert.Positive(t, p.Metrics().Naked.Load())
	assert.Equal(t, 1, e.recordCount(), "one record for send")
}

// When messages waiting on retries fill three quarters of MaxAckPending,
// failures skip their immediate retries and are recorded at once, so the
// consumer never fills and the sibling keeps getting its events.
func TestRetriesAreShedBeforeTheConsumerFills(t *testing.T) {
	const maxAckPending, events = 8, 20
	e := newEnv(t)
	gate := newGate() // never opened: retries wait until shed or stopped
	// Circuits off: the 20 failures in a row would open send's circuit,
	// which ends immediate retries of its own (circuit_test.go).
	p := e.processor(processor.WithMaxAckPending(maxAckPending), processor.WithSleeper(gate.Sleep), processor.WithCircuitPolicy(circuit.Policy{Off: true}))
	send, audit := newCounter(), newCounter()
	send.failWith(failure.Recoverable(errBoom))
	require.NoError(t, p.Register(fn("Mailer", "send"), send.handle))
	require.NoError(t, p.Register(fn("Mailer", "audit"), audit.handle))
	run(t, p)
	for i := range events {
		e.emit(order("o-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
	}
	require.Eventually(t, func() bool { return audit.total.Load() == events }, waitFor, tick, "audit got every event")
	// Once the consumer holds 6 (3/4 of 8), failures are shed: at most 5
	// messages wait for their retry (the sixth held is the one failing),
	// and every other failure is recorded at once.
	shed := &p.FunctionMetrics("Mailer", "send").RetriesShed
	require.Eventually(t, func() bool { return shed.Load()+uint64(gate.waiting.Load()) == events }, waitFor, tick,
		"each failure waits for its retry or is shed")
	assert.LessOrEqual(t, gate.waiting.Load(), int64(maxAckPending*3/4-1), "fewer than 3/4 of MaxAckPending wait")
	assert.Positive(t, gate.waiting.Load(), "retries wait while there is room")
	require.Eventually(t, func() bool { return e.recordCount() == int(shed.Load()) }, waitFor, tick, "every shed failure recorded")
}
