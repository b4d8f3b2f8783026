package processor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/processor"
)

// A failing function yields exactly one record with the right fields; the
// other functions of that event ran once.
func TestFailureYieldsOneRecord(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	mailer, projector, audit := newCounter(), newCounter(), newCounter()
	mailer.failWith(failure.Unrecoverable(errBoom))
	spec := aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}
	require.NoError(t, p.Register(fn("Mailer", "onPlaced", "order_placed"), mailer.handle, processor.RetrySpec(spec)))
	require.NoError(t, p.Register(fn("Projector", "onPlaced", "order_placed"), projector.handle))
	require.NoError(t, p.Register(fn("Audit", "onAny"), audit.handle))
	run(t, p)

	st := e.emit(order("o-1"), 1, ev("order_placed", map[string]int{"qty": 2}))
	evt := st.Events[0]
	require.Eventually(t, func() bool { return e.settled("Mailer") && e.settled("Projector") && e.settled("Audit") }, waitFor, tick)

	rec := e.record(evt.ID, info("Mailer", "onPlaced"))
	require.Equal(t, aggregate.StatusFailed, rec.Status, "the mailer's failure is recorded")
	assert.Equal(t, aggregate.EventID{
		ID:          evt.ID,
		AggregateID: aggregate.WireAggregateID{ContextName: ctxName, AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID},
		Version:     1,
		Seq:         st.Seq,
	}, rec.EventID)
	assert.Equal(t, info("Mailer", "onPlaced"), rec.Function)
	assert.Equal(t, "Unclassified", rec.Error.ErrorCode, "a plain error has the neutral generic code")
	assert.Equal(t, "boom", rec.Error.ErrorMsg)
	assert.Equal(t, spec, rec.RetrySpec)
	assert.Equal(t, aggregate.Unrecoverable, rec.Recoverable)
	assert.Equal(t, t0, rec.ExecuteAt)
	assert.Equal(t, 1, e.recordCount(), "exactly one record")

	assert.Equal(t, 1, mailer.count(evt.ID), "an unrecoverable error is not retried at once")
	assert.Equal(t, 1, projector.count(evt.ID), "the other functions ran once")
	assert.Equal(t, 1, audit.count(evt.ID))
	assert.Equal(t, uint64(1), e.rec.Metrics().Recorded.Load())
	assert.Equal(t, uint64(1), p.Metrics().Outcome(processor.OutcomeRecorded))
	assert.Equal(t, uint64(0), p.Metrics().Naked.Load(), "every message acked")
}

// Immediate retries: RECOVERABLE errors only, 3 by default with growing
// backoff; STATE_EVENT functions none.
func TestImmediateRetries(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	flaky, broken := newCounter(), newCounter()
	flaky.failWith(failure.Recoverable(errBoom))
	broken.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "flaky"), flaky.handle))
	require.NoError(t, p.Register(fn("Mailer", "broken"), broken.handle))
	run(t, p)

	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)

	assert.Equal(t, 4, flaky.count(st.Events[0].ID), "a recoverable error is retried 3 times")
	assert.Equal(t, 1, broken.count(st.Events[0].ID), "an unknown error is not retried")
	assert.Equal(t, aggregate.Recoverable, e.record(st.Events[0].ID, info("Mailer", "flaky")).Recoverable)
	assert.Equal(t, aggregate.RecoverabilityUnknown, e.record(st.Events[0].ID, info("Mailer", "broken")).Recoverable)
	d := e.sleeps.All()
	require.Len(t, d, 3, "three waits between four calls")
	for i, want := range []float64{2, 4, 8} {
		assert.InDelta(t, want, d[i].Seconds(), want/2, "wait %d is %gs ± jitter 0.5", i, want)
	}
	m := p.FunctionMetrics("Mailer", "flaky")
	assert.Equal(t, uint64(4), m.Calls.Load())
	assert.Equal(t, uint64(3), m.Retries.Load())
	assert.Equal(t, uint64(1), m.Failed.Load())
}

// A function that opted out is not recorded, and the message is acked.
func TestNoCompensationWaives(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	c := newCounter()
	c.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "optedOut"), c.handle, processor.NoCompensation()))
	run(t, p)
	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	rec := e.record(st.Events[0].ID, info("Mailer", "optedOut"))
	assert.False(t, rec.Exists(), "no record")
	assert.Equal(t, uint64(1), e.rec.Metrics().Waived.Load())
}

// Without a recorder a failure is FAILURE_UNRECORDED: logged, counted and
// acked.
func TestWithoutRecorderFailuresAreUnrecorded(t *testing.T) {
	e := newEnv(t)
	p, err := processor.New(e.js, e.store, ctxName, processor.WithLogger(quietLogger()), processor.WithSleeper(e.sleeps.Sleep))
	require.NoError(t, err)
	c := newCounter()
	c.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), c.handle))
	run(t, p)
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, uint64(1), p.Metrics().Outcome(processor.OutcomeUnrecorded))
	assert.Equal(t, 0, e.recordCount())
}

// gatedRecorder holds every recording until open is closed, and counts
// how many it holds at once.
type gatedRecorder struct {
	processor.FailureRecorder
	open      chan struct{}
	now, most atomic.Int32
}

func (r *gatedRecorder) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	now := r.now.Add(1)
	for m := r.most.Load(); now > m && !r.most.CompareAndSwap(m, now); m = r.most.Load() {
	}
	defer r.now.Add(-1)
	select {
	case <-r.open:
	case <-ctx.Done():
		return processor.OutcomeRecordingFailed, ctx.Err()
	}
	return r.FailureRecorder.Record(ctx, x)
}

// A backlog of failures is recorded by at most 64 recordings at a time
// on a processor of one lane (four a lane, at least 64), the rest
// waiting their turn: the lane goes on meanwhile, and every failure is
// recorded in the end.
func TestABacklogOfFailuresIsRecordedAFewAtATime(t *testing.T) {
	const failures, limit = 90, 64
	e := newEnv(t)
	rec := &gatedRecorder{FailureRecorder: e.rec, open: make(chan struct{})}
	p := e.processor(processor.WithRecorder(rec), processor.WithConcurrency(1), processor.WithImmediateRetry(processor.Retry{}))
	failing, marks := newCounter(), newCounter()
	failing.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "send", "order_placed"), failing.handle))
	require.NoError(t, p.Register(fn("Ledger", "mark", "order_marked"), marks.handle))
	run(t, p)
	for i := range failures {
		e.emit(order(fmt.Sprintf("o-%d", i)), 1, ev("order_placed", struct{}{}))
	}
	// The one lane handles its messages in turn: once it called mark,
	// it had handed every failure over for recording.
	e.emit(order("m"), 1, ev("order_marked", struct{}{}))
	testwait.For(t, "the lane went on past the held recordings", func() bool { return marks.total.Load() == 1 })
	testwait.For(t, "the limit's recordings under way", func() bool { return rec.now.Load() >= limit })
	assert.EqualValues(t, limit, rec.most.Load(), "no more than the limit at once, though every failure waits")
	close(rec.open)
	testwait.For(t, "every failure recorded", func() bool { return e.rec.Metrics().Recorded.Load() == failures })
	assert.EqualValues(t, limit, rec.most.Load())
	assert.Equal(t, failures, e.recordCount())
}

// A processor stopped with recordings held and more queued behind them
// loses none: its Run returns once the shutdown timeout cancels them, and
// the next processor records every failure once.
func TestAStopWithQueuedRecordingsLosesNone(t *testing.T) {
	const failures, limit = 90, 64
	e := newEnv(t)
	rec := &gatedRecorder{FailureRecorder: e.rec, open: make(chan struct{})}
	failing := newCounter()
	failing.failWith(errBoom)
	register := func(p *processor.Processor) {
		require.NoError(t, p.Register(fn("Mailer", "send", "order_placed"), failing.handle))
	}
	noCircuit := processor.WithCircuitPolicy(circuit.Policy{Off: true}) // every failure a call
	p := e.processor(processor.WithRecorder(rec), processor.WithConcurrency(1), processor.WithImmediateRetry(processor.Retry{}),
		processor.WithShutdownTimeout(50*time.Millisecond), noCircuit)
	register(p)
	stop := run(t, p)
	for i := range failures {
		e.emit(order(fmt.Sprintf("o-%d", i)), 1, ev("order_placed", struct{}{}))
	}
	testwait.For(t, "every failure handed over, the limit's recordings held", func() bool {
		return failing.total.Load() == failures && rec.now.Load() == limit
	})
	stop() // fails the test if Run does not return
	assert.Zero(t, rec.now.Load(), "the held recordings were cancelled")
	assert.Zero(t, e.recordCount(), "none was recorded")

	close(rec.open)
	next := e.processor(processor.WithConcurrency(1), processor.WithImmediateRetry(processor.Retry{}), noCircuit)
	register(next)
	run(t, next)
	// The recorder counts a recording once its record is stored: wait for
	// the count, not for the records.
	testwait.For(t, "every failure recorded by the next processor", func() bool { return e.rec.Metrics().Recorded.Load() == failures })
	assert.Equal(t, failures, e.recordCount(), "each once")
	assert.Zero(t, e.rec.Metrics().AlreadyRecorded.Load(), "none recorded twice")
}
