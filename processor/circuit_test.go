package processor_test

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

var errSMTP = errors.New("smtp 451: mail service unavailable")

// quick is a circuit that opens after 3 failures in a row and closes
// after one successful probe, 10 s after it opened.
var quick = circuit.Policy{ConsecutiveFailures: 3, CoolDown: 10 * time.Second, Successes: 1}

func openCircuit(t *testing.T, e *env, fnName string) circuit.State {
	t.Helper()
	st, err := circuit.OpenStore(t.Context(), e.js)
	require.NoError(t, err)
	s, _, err := st.Get(t.Context(), circuit.Function{Context: ctxName, Processor: "Mailer", Name: fnName})
	require.NoError(t, err)
	return s
}

// Given a function whose dependency is down, when its circuit opens after
// 3 failures, then it is not called for the next events: each gets its
// record at once, an ordinary ExecutionFailed with errorCode CircuitOpen,
// a message and fingerprint of the refusal's own (the last real failure
// shown as such) and the function's retry spec; its sibling gets every
// event, and every message is acked.
func TestCircuitOpenRecordsWithoutCalling(t *testing.T) {
	e := newEnv(t)
	p := e.processor(processor.WithImmediateRetry(processor.Retry{}))
	send, audit := newCounter(), newCounter()
	send.failWith(failure.Recoverable(errSMTP))
	spec := aggregate.RetrySpec{MaxRetries: 7, MinBackoff: 30, ExecutionTimeout: 60}
	require.NoError(t, p.Register(fn("Mailer", "send"), send.handle, processor.Circuit(quick), processor.RetrySpec(spec)))
	require.NoError(t, p.Register(fn("Mailer", "audit"), audit.handle))
	run(t, p)
	var ids []string
	for i := range 10 {
		st := e.emit(order("o-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
		ids = append(ids, st.Events[0].ID)
		if i == 2 { // the third failure opens the circuit; wait for it, so the count below is exact
			require.Eventually(t, func() bool { return send.total.Load() == 3 && e.settled("Mailer") }, waitFor, tick)
		}
	}
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, int64(3), send.total.Load(), "called until the circuit opened, then not")
	assert.Equal(t, int64(10), audit.total.Load(), "the sibling gets every event")
	m := p.FunctionMetrics("Mailer", "send")
	assert.Equal(t, uint64(7), m.Refused.Load())
	assert.Equal(t, 10, e.recordCount())
	real := e.record(ids[2], info("Mailer", "send"))
	for _, id := range ids[3:] {
		r := e.record(id, info("Mailer", "send"))
		assert.Equal(t, aggregate.StatusFailed, r.Status)
		assert.Equal(t, circuit.ErrorCode, r.Error.ErrorCode, "errorCode CircuitOpen")
		assert.Contains(t, r.Error.ErrorMsg, "the event was never tried. The circuit's last real failure (of another event): "+errSMTP.Error(),
			"about the refusal, the last real failure shown as such")
		assert.NotEqual(t, real.Error.Fingerprint, r.Error.Fingerprint, "a fingerprint of its own")
		assert.Equal(t, e.record(ids[3], info("Mailer", "send")).Error.Fingerprint, r.Error.Fingerprint, "one for the function's refusals")
		assert.Equal(t, aggregate.Recoverable, r.Recoverable, "retryable: never tried")
		assert.Equal(t, spec, r.RetrySpec, "the function's retry spec")
		assert.Equal(t, int32(0), r.RetryState.Retries)
	}
	assert.Equal(t, "Unclassified", real.Error.ErrorCode, "the real failures keep their code")
	st, ok := p.Circuit("Mailer", "send")
	require.True(t, ok)
	assert.Equal(t, circuit.Open, st.Phase)
	assert.Equal(t, openCircuit(t, e, "send").Phase, circuit.Open, "the circuit is open in the bucket")
	a, ok := p.Circuit("Mailer", "audit")
	require.True(t, ok)
	assert.Equal(t, circuit.Closed, a.Phase, "a circuit per function")
}

// An execution, its call and its immediate retries, is one observation;
// a failure with a retry to come counts towards the streak (pending), so
// a dead dependency opens the circuit on first calls: the failure that
// opens it, and an immediate retry that wakes to the open circuit, are
// recorded at once: no call is made while it is open.
func TestCircuitEndsImmediateRetries(t *testing.T) {
	e := newEnv(t)
	gate := newGate()
	p := e.processor(processor.WithSleeper(gate.Sleep))
	var calls atomic.Int64
	send := func(_ context.Context, d *processor.Delivery) error {
		calls.Add(1)
		if d.Stream.Aggregate.ID == "a" {
			return failure.Recoverable(errSMTP) // retried at once
		}
		return errSMTP // UNKNOWN: final, no immediate retry
	}
	require.NoError(t, p.Register(fn("Mailer", "send"), send, processor.Circuit(circuit.Policy{ConsecutiveFailures: 2, CoolDown: time.Minute})))
	run(t, p)
	a := e.emit(order("a"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return gate.waiting.Load() == 1 }, waitFor, tick, "a waits for its first retry")
	st, _ := p.Circuit("Mailer", "send")
	assert.Equal(t, circuit.Closed, st.Phase, "one failure in a row")
	b := e.emit(order("b"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.record(b.Events[0].ID, info("Mailer", "send")).Status == aggregate.StatusFailed }, waitFor, tick,
		"b's failure, the second in a row, opened the circuit")
	st, _ = p.Circuit("Mailer", "send")
	assert.Equal(t, circuit.Open, st.Phase)
	assert.Equal(t, int64(2), calls.Load())
	close(gate.open)
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, int64(2), calls.Load(), "a's retry woke to an open circuit: no call")
	r := e.record(a.Events[0].ID, info("Mailer", "send"))
	assert.Equal(t, circuit.ErrorCode, r.Error.ErrorCode)
	assert.Equal(t, uint64(1), p.FunctionMetrics("Mailer", "send").Refused.Load())
}

// Given an open circuit, when its cool-down passes, then the next event is
// the probe; its success closes the circuit (one success) and the events
// after it are called again. A replay while open is refused as well, and
// no call is made: its record, which failed for a real reason before,
// keeps that failure (its code and fingerprint), the refusal told in its
// message, so that it is never taken for a refused event's record.
func TestCircuitProbeClosesAndReplaysGoThroughIt(t *testing.T) {
	e := newEnv(t)
	p := e.processor(processor.WithImmediateRetry(processor.Retry{}))
	send := newCounter()
	send.failWith(failure.Recoverable(errSMTP))
	require.NoError(t, p.Register(fn("Mailer", "send"), send.handle, processor.Circuit(quick)))
	run(t, p)
	var first string
	for i := range 3 {
		st := e.emit(order("o-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
		if i == 0 {
			first = aggregate.RecordID(st.Events[0].ID, info("Mailer", "send"))
		}
	}
	require.Eventually(t, func() bool { return e.settled("Mailer") && e.recordCount() == 3 }, waitFor, tick)
	st, _ := p.Circuit("Mailer", "send")
	require.Equal(t, circuit.Open, st.Phase)

	// A replay while open: refused, recorded, no call.
	before, _, err := e.svc.Get(context.Background(), first)
	require.NoError(t, err)
	attempt := e.prepare(first, false)
	require.Eventually(t, func() bool {
		s, _, err := e.svc.Get(context.Background(), first)
		return err == nil && s.Status == aggregate.StatusFailed && s.RetryState.Retries == attempt
	}, waitFor, tick, "the replay is applied as failed")
	s, _, err := e.svc.Get(context.Background(), first)
	require.NoError(t, err)
	assert.Equal(t, "Unclassified", s.Error.ErrorCode, "the record keeps its own failure")
	assert.Equal(t, before.Error.Fingerprint, s.Error.Fingerprint)
	assert.Equal(t, before.Recoverable, s.Recoverable)
	assert.Contains(t, s.Error.ErrorMsg, errSMTP.Error()+" [this replay was refused: the circuit of shop.Mailer.send is OPEN since ")
	assert.Equal(t, int64(3), send.total.Load(), "no call")

	// The cool-down passes and the dependency is back: the next event probes.
	send.succeed()
	e.clock.Set(time.UnixMilli(t0).Add(10 * time.Second))
	next := e.emit(order("o-3"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, 1, send.count(next.Events[0].ID), "the probe")
	assert.Equal(t, uint64(1), p.FunctionMetrics("Mailer", "send").Probes.Load())
	st, _ = p.Circuit("Mailer", "send")
	assert.Equal(t, circuit.Closed, st.Phase, "one success closes it")
	assert.NotZero(t, st.Incident.To, "the incident ended")
	after := e.emit(order("o-4"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return send.count(after.Events[0].ID) == 1 }, waitFor, tick, "called again")
	assert.Equal(t, 3, e.recordCount(), "no record for the probe and after")
}

// For an Ordered function the hold contract applies to a refused call as
// to any failure: the refused event's record is the head of its
// aggregate's hold, and the aggregate's later events are held.
func TestCircuitOpenHoldsOrderedFunctions(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e := newEnv(t)
	p := e.processor()
	require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle, processor.Ordered(),
		processor.Circuit(circuit.Policy{ConsecutiveFailures: 1, CoolDown: time.Hour})))
	run(t, p)
	hs, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	e.emit(order("o-1"), 1, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
	v1 := e.emit(order("o-2"), 1, ev("step", struct{}{}))
	v2 := e.emit(order("o-2"), 2, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
	assert.Empty(t, s.versions("o-2"), "the circuit is open: not called")
	head := e.record(v1.Events[0].ID, projector)
	assert.Equal(t, circuit.ErrorCode, head.Error.ErrorCode)
	assert.Equal(t, aggregate.State{}, e.record(v2.Events[0].ID, projector), "a held event has no record")
	h, err := hs.Get(t.Context(), holdKey("o-2"))
	require.NoError(t, err)
	assert.Equal(t, aggregate.RecordID(v1.Events[0].ID, projector), h.Head.Record)
	require.Len(t, h.Held, 1)
	assert.Equal(t, uint64(2), h.Held[0].Version)
}

// Failures the function's rules call UNRECOVERABLE never open its
// circuit: they are about the event.
func TestCircuitIgnoresUnrecoverableFailures(t *testing.T) {
	e := newEnv(t)
	p := e.processor(processor.WithImmediateRetry(processor.Retry{}))
	send := newCounter()
	errBad := errors.New("invalid address")
	send.failWith(errBad)
	require.NoError(t, p.Register(fn("Mailer", "send"), send.handle, processor.Circuit(quick), processor.UnrecoverableOn(failure.Is(errBad))))
	run(t, p)
	for i := range 6 {
		e.emit(order("o-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
	}
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, int64(6), send.total.Load(), "called for every event")
	st, _ := p.Circuit("Mailer", "send")
	assert.Equal(t, circuit.Closed, st.Phase)
}

func TestWithCircuitRefusesAnInvalidPolicy(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	err := p.Register(fn("Mailer", "send"), newCounter().handle, processor.Circuit(circuit.Policy{FailureRatio: 2}))
	require.ErrorIs(t, err, processor.ErrInvalidFunction)
	assert.Contains(t, err.Error(), "failureRatio must be above 0 and at most 1, got 2")
	_, err = processor.New(e.js, e.store, ctxName, processor.WithCircuitPolicy(circuit.Policy{Window: time.Millisecond}))
	require.ErrorIs(t, err, processor.ErrInvalidOption)
}

// A processor that cannot open the circuits bucket (here: another stream
// holds its subjects) runs all the same, each circuit on this instance.
func TestCircuitsWithoutTheirBucket(t *testing.T) {
	e := newEnv(t)
	_, err := e.js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "squatter", Subjects: []string{"$KV." + circuit.DefaultBucket + ".>"}})
	require.NoError(t, err)
	p := e.processor(processor.WithImmediateRetry(processor.Retry{}))
	send := newCounter()
	send.failWith(failure.Recoverable(errSMTP))
	require.NoError(t, p.Register(fn("Mailer", "send"), send.handle, processor.Circuit(quick)))
	run(t, p)
	for i := range 5 {
		e.emit(order("o-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
		if i == 2 { // the third failure opens the circuit; wait for it, so the count below is exact
			require.Eventually(t, func() bool { return send.total.Load() == 3 && e.settled("Mailer") }, waitFor, tick)
		}
	}
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	assert.Equal(t, int64(3), send.total.Load(), "the circuit opened on this instance")
	st, _ := p.Circuit("Mailer", "send")
	assert.Equal(t, circuit.Open, st.Phase)
}

// Given the default circuit, when half of the events always fail for
// their own reason (a plain error, by a hash of the event id), then the
// circuit never opens: every healthy event is called once and succeeds,
// no healthy event is recorded; when the dependency then dies, it opens
// within 20 distinct events.
func TestBadEventsNeverOpenTheDefaultCircuit(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	var down atomic.Bool
	var calls atomic.Int64
	healthy := map[string]int{}
	var mu sync.Mutex
	errBad := errors.New("550 bad address")
	h := func(_ context.Context, d *processor.Delivery) error {
		calls.Add(1)
		if down.Load() {
			return errSMTP
		}
		if badEvent(d.Event.ID, 50) {
			return errBad
		}
		mu.Lock()
		healthy[d.Event.ID]++
		mu.Unlock()
		return nil
	}
	require.NoError(t, p.Register(fn("Mailer", "send"), h))
	run(t, p)
	bad := 0
	for i := range 300 {
		st := e.emit(order("o-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
		if badEvent(st.Events[0].ID, 50) {
			bad++
		}
	}
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	st, ok := p.Circuit("Mailer", "send")
	require.True(t, ok)
	require.Equal(t, circuit.Closed, st.Phase, "bad events opened the circuit: %+v", st.Transitions)
	assert.Empty(t, st.Transitions)
	assert.Equal(t, bad, e.recordCount(), "one record per bad event, none of a healthy one")
	mu.Lock()
	assert.Len(t, healthy, 300-bad, "every healthy event succeeded")
	for id, n := range healthy {
		assert.Equal(t, 1, n, "%s called once", id)
	}
	mu.Unlock()
	assert.Zero(t, p.FunctionMetrics("Mailer", "send").Refused.Load())

	// One event at a time, each recorded before the next is appended, so
	// that which events a dead dependency's circuit lets through does not
	// depend on how many lanes run at once.
	down.Store(true)
	before := calls.Load()
	for i := range 40 {
		n := e.recordCount()
		e.emit(order("d-"+itoa(uint64(i))), 1, ev("order_placed", struct{}{}))
		require.Eventually(t, func() bool { return e.recordCount() > n }, waitFor, tick, "event d-%d is recorded", i)
	}
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	st, _ = p.Circuit("Mailer", "send")
	require.NotEqual(t, circuit.Closed, st.Phase, "a dead dependency opens it")
	tr := st.Transitions[0]
	assert.Equal(t, circuit.CauseConsecutive, tr.Cause)
	assert.Equal(t, 20, tr.Failures, "after 20 distinct events")
	called, refused := calls.Load()-before, p.FunctionMetrics("Mailer", "send").Refused.Load()
	assert.LessOrEqual(t, called, int64(20), "no event after the failures that opened it is called")
	assert.Equal(t, int64(40), called+int64(refused), "every later event was refused instead: %d called, %d refused", called, refused)
}

// badEvent reports whether event id is among the pct percent of events
// that always fail for their own reason, by a hash of the id.
func badEvent(id string, pct int) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32()%100) < pct
}
