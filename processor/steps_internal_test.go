package processor

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/inflight"
)

// Each step of the chain (steps.go) on its own, around a handler the test
// controls: what it does before the call, whether it makes the call, and
// what it leaves on the Delivery for the steps outside it.

var errStep = errors.New("the handler failed")

// stepFunction is a registered function of kind with retries immediate
// retries, its handler h (nil: one that succeeds), and opts.
func stepFunction(t *testing.T, kind aggregate.FunctionKind, retries int, h Handler, opts ...FunctionOption) *function {
	t.Helper()
	if h == nil {
		h = func(context.Context, *Delivery) error { return nil }
	}
	f, err := newFunction("shop", Function{Processor: "Steps", Name: "onPlaced", Kind: kind, AggregateTypes: []string{"order"}},
		h, Retry{Retries: retries, Backoff: Backoff{Min: time.Millisecond}}, opts)
	require.NoError(t, err)
	return f
}

// stepDelivery is a delivery of one event, as a live task makes it.
func stepDelivery() *Delivery {
	st := eventstore.Stream{ID: "s-1", Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}, Version: 1, Seq: 7,
		Events: []eventstore.Event{{ID: "e-1", Name: "order_placed", Body: []byte(`{}`)}}}
	return &Delivery{Stream: &st, Event: &st.Events[0], Index: 0, cacheState: true}
}

// answer is a handler that counts its calls and returns err.
func answer(calls *int, err error) Handler {
	return func(context.Context, *Delivery) error {
		*calls++
		return err
	}
}

// leave is a handler that sets what an inner step would leave on the
// delivery, then returns err.
func leave(again, unjudged bool, err error) Handler {
	return func(_ context.Context, d *Delivery) error {
		d.again, d.unjudged = again, unjudged
		return err
	}
}

func TestComposeWrapsTheFirstStepOutermost(t *testing.T) {
	var order []string
	trace := func(name string) callStep {
		return func(next Handler) Handler {
			return func(ctx context.Context, d *Delivery) error {
				order = append(order, name+">")
				err := next(ctx, d)
				order = append(order, "<"+name)
				return err
			}
		}
	}
	h := compose(func(context.Context, *Delivery) error { order = append(order, "handler"); return nil }, trace("a"), trace("b"))
	require.NoError(t, h(context.Background(), stepDelivery()))
	assert.Equal(t, []string{"a>", "b>", "handler", "<b", "<a"}, order)
}

func TestCountedCountsTheCallsOutcome(t *testing.T) {
	f := stepFunction(t, aggregate.KindEvent, 0, nil)
	ctx, d := context.Background(), stepDelivery()
	require.NoError(t, counted(f)(leave(false, false, nil))(ctx, d))
	require.ErrorIs(t, counted(f)(leave(true, false, errStep))(ctx, d), errStep) // a retry follows: not failed yet
	require.ErrorIs(t, counted(f)(leave(false, false, errStep))(ctx, d), errStep)
	require.ErrorIs(t, counted(f)(leave(false, true, errStep))(ctx, d), errStep) // a state not built is a failure too
	assert.Equal(t, uint64(1), f.stats.Succeeded.Load())
	assert.Equal(t, uint64(2), f.stats.Failed.Load())
}

// breakerOf gives f an in-memory breaker that opens after one failure.
func breakerOf(t *testing.T, f *function) *circuit.Breaker {
	t.Helper()
	set := circuit.NewSet(nil, "shop", "i-1", nil, nil)
	b, err := set.Breaker(circuit.Of(f.info), circuit.Policy{ConsecutiveFailures: 1, CoolDown: time.Hour})
	require.NoError(t, err)
	f.br.Store(b)
	return b
}

func TestGuardedRefusesWhileTheCircuitIsOpen(t *testing.T) {
	p := &Processor{o: defaultOptions()}
	f := stepFunction(t, aggregate.KindEvent, 0, nil)
	ctx := context.Background()
	calls := 0

	// Without a breaker (before Run) every call is made.
	require.ErrorIs(t, p.guarded(f)(answer(&calls, errStep))(ctx, stepDelivery()), errStep)
	assert.Equal(t, 1, calls)

	b := breakerOf(t, f)
	// A call that could not be made (its state not built) says nothing
	// of the dependency: it does not open the circuit.
	d := stepDelivery()
	d.at = time.Now()
	require.Error(t, p.guarded(f)(leave(false, true, errStep))(ctx, d))
	assert.True(t, b.Passing(), "an unjudged failure must not open the circuit")

	// A final failure opens it; the next call is refused without a call.
	d = stepDelivery()
	d.at = time.Now()
	require.Error(t, p.guarded(f)(leave(false, false, errStep))(ctx, d))
	require.False(t, b.Passing(), "a final failure opens a circuit of ConsecutiveFailures 1")
	d = stepDelivery()
	d.at = time.Now()
	err := p.guarded(f)(answer(&calls, nil))(ctx, d)
	require.ErrorIs(t, err, circuit.ErrOpen)
	var open *circuit.OpenError
	require.ErrorAs(t, err, &open)
	assert.Equal(t, 1, calls, "a refused call is not made")
	assert.Equal(t, uint64(1), f.stats.Refused.Load())
}

func TestStatedBuildsTheStateOfStateEventFunctionsOnly(t *testing.T) {
	p := &Processor{o: defaultOptions(), evolvers: map[string]Evolver{}}
	ctx := context.Background()
	calls := 0
	next := answer(&calls, nil)

	ev := stepFunction(t, aggregate.KindEvent, 0, nil)
	assert.Equal(t, reflect.ValueOf(next).Pointer(), reflect.ValueOf(p.stated(ev)(next)).Pointer(),
		"an EVENT function's chain has no state step")

	se := stepFunction(t, aggregate.KindStateEvent, 0, nil)
	d := stepDelivery()
	d.State = "built before" // a retry of the same delivery: not built again
	require.NoError(t, p.stated(se)(next)(ctx, d))
	assert.Equal(t, 1, calls)
	assert.Equal(t, "built before", d.State)

	d = stepDelivery() // no evolve registered for "order": the state cannot be built
	err := p.stated(se)(next)(ctx, d)
	require.ErrorIs(t, err, ErrInvalidFunction)
	assert.True(t, d.unjudged, "a state that cannot be built is no answer of the function")
	assert.Equal(t, 1, calls, "the function is not called without its state")
}

func TestRetriedDecidesTheImmediateRetry(t *testing.T) {
	recoverable := failure.Recoverable(errStep)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		n      int
		err    error
		closed bool // the circuit opens during the call
		again  bool
	}{
		{name: "success", err: nil},
		{name: "recoverable with retries left", err: recoverable, again: true},
		{name: "recoverable, the last retry made", n: 2, err: recoverable},
		{name: "unknown", err: errStep},
		{name: "unrecoverable", err: failure.Unrecoverable(errStep)},
		{name: "stopping", ctx: cancelled, err: recoverable},
		{name: "the circuit opened", err: recoverable, closed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := stepFunction(t, aggregate.KindEvent, 2, nil)
			b := breakerOf(t, f)
			if c.closed {
				ticket, refused := b.Allow(context.Background(), time.Now(), circuit.Call{Event: "e-0"})
				require.Nil(t, refused)
				b.Done(context.Background(), time.Now(), ticket, circuit.Outcome{Err: errStep, Counted: true})
				require.False(t, b.Passing())
			}
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			d := stepDelivery()
			d.n = c.n
			err := retried(f)(func(context.Context, *Delivery) error { return c.err })(ctx, d)
			assert.Equal(t, c.err, err)
			assert.Equal(t, c.again, d.again)
		})
	}
}

func TestClassifiedUsesTheFunctionsRules(t *testing.T) {
	f := stepFunction(t, aggregate.KindEvent, 0, nil, UnrecoverableOn(failure.Is(errStep)))
	ctx := context.Background()
	d := stepDelivery()
	require.NoError(t, classified(f)(leave(false, false, nil))(ctx, d))
	assert.Empty(t, d.class, "a success has no class")
	require.Error(t, classified(f)(leave(false, false, errStep))(ctx, d))
	assert.Equal(t, aggregate.Unrecoverable, d.class)
}

func TestInvokedCountsTheCallAndRecoversAPanic(t *testing.T) {
	f := stepFunction(t, aggregate.KindEvent, 0, nil)
	err := invoked(f)(func(context.Context, *Delivery) error { panic("boom") })(context.Background(), stepDelivery())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Steps.onPlaced panicked: boom")
	assert.Equal(t, uint64(1), f.stats.Calls.Load())
}

func TestCallRunsTheChainOncePerCall(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	o := defaultOptions()
	o.clock = aggregate.ClockFunc(func() time.Time { return now })
	p := &Processor{o: o}
	calls := 0
	f := stepFunction(t, aggregate.KindEvent, 1, answer(&calls, failure.Recoverable(errStep)))
	f.run = p.chain(f)
	ctx, d := context.Background(), stepDelivery()

	wait, again, err := p.call(ctx, f, d)
	require.ErrorIs(t, err, errStep)
	require.True(t, again, "a recoverable failure with a retry left")
	assert.Equal(t, f.retry.Backoff.Delay(0), wait)
	assert.Equal(t, now, d.started)
	p.retrying(ctx, f, d, wait, err)
	require.Equal(t, 1, d.n)

	now = now.Add(time.Second)
	_, again, err = p.call(ctx, f, d)
	require.ErrorIs(t, err, errStep)
	assert.False(t, again, "the last retry made")
	assert.Equal(t, now.Add(-time.Second), d.started, "a retry belongs to the attempt's start")
	assert.Equal(t, now, d.at)
	assert.Equal(t, 2, calls)
	assert.Equal(t, uint64(2), f.stats.Calls.Load())
	assert.Equal(t, uint64(1), f.stats.Failed.Load(), "an attempt fails once, however many calls it made")
}

// A call no message carries (a range replay's, a release's) waits for each
// immediate retry on its lane's timer, then records its final failure off
// the lane and finishes on the lane.
func TestACallTaskWaitsForEachRetryOnItsLanesTimer(t *testing.T) {
	var mu sync.Mutex
	var waited []time.Duration
	o := defaultOptions()
	o.sleep, o.sleeperSet = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waited = append(waited, d)
		mu.Unlock()
		return ctx.Err()
	}, true
	p := &Processor{o: o}
	calls := 0
	f := stepFunction(t, aggregate.KindEvent, 2, answer(&calls, failure.Recoverable(errStep)))
	f.run = p.chain(f)
	r, err := p.newRunner("S", jetstream.ConsumerConfig{Durable: "c", AckWait: time.Minute, MaxAckPending: 10}, 1, &p.metrics.ConsumerMetrics)
	require.NoError(t, err)
	lane := inflight.NewLane()
	ls := newLaneState(r, lane, context.Background())

	finished := make(chan struct{})
	task := &callTask{f: f, k: taskKey{f: f, subject: "o-1"}, d: stepDelivery(), c: Compensation{Request: "r-1"}}
	task.w = &msgWork{finish: func(context.Context, *msgWork) disposition { close(finished); return task.result }}
	ctx := t.Context()
	ls.begin(task.w)
	ls.schedule(ctx, task)
	ls.end(ctx, task.w)
	require.Eventually(t, func() bool {
		r.background.Wait()
		lane.RunPosted(ctx) // the timers' and the recording's resumptions
		select {
		case <-finished:
			return true
		default:
			return false
		}
	}, 30*time.Second, time.Millisecond, "the task finishes")
	assert.Equal(t, 3, calls, "the call and its two immediate retries")
	mu.Lock()
	assert.Len(t, waited, 2, "one wait on the timer before each retry")
	mu.Unlock()
	assert.Equal(t, uint64(2), f.stats.Retries.Load())
	assert.Equal(t, ack, task.result, "finished, not interrupted")
	require.ErrorIs(t, task.res.err, errStep, "the last call's error")
	assert.Equal(t, OutcomeUnrecorded, task.res.out, "its failure handed to the recorder (none here)")
	assert.Empty(t, ls.blocked, "its key is free again")
}

// The whole chain counts each outcome once: a refused call is one
// refusal and one failure, and no call.
func TestTheChainCountsARefusalOnce(t *testing.T) {
	p := &Processor{o: defaultOptions()}
	calls := 0
	f := stepFunction(t, aggregate.KindEvent, 0, answer(&calls, errStep))
	f.run = p.chain(f)
	breakerOf(t, f)
	ctx := context.Background()

	_, _, err := p.call(ctx, f, stepDelivery()) // opens the circuit
	require.ErrorIs(t, err, errStep)
	d := stepDelivery()
	d.Event.ID = "e-2"
	_, again, err := p.call(ctx, f, d)
	require.ErrorIs(t, err, circuit.ErrOpen)
	assert.False(t, again)
	assert.Equal(t, 1, calls)
	assert.Equal(t, uint64(1), f.stats.Calls.Load())
	assert.Equal(t, uint64(1), f.stats.Refused.Load())
	assert.Equal(t, uint64(2), f.stats.Failed.Load(), "the failed call and the refusal, each once")
	assert.Zero(t, f.stats.Succeeded.Load())
}
