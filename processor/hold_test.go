package processor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
)

// seen is an Ordered function's handler: it logs the versions it was
// given per aggregate and fails on the versions told to.
type seen struct {
	mu    sync.Mutex
	log   map[string][]uint64 // aggregate id → versions, in call order
	comps []processor.Compensation
	fail  map[string]int // "id@v" → failures left
	gate  chan struct{}  // when set, calls on blockAt wait on it
	block string         // "id@v"
	in    chan struct{}  // signalled when a call reaches the gate
}

func newSeen() *seen {
	return &seen{log: make(map[string][]uint64), fail: make(map[string]int), in: make(chan struct{}, 16)}
}

func at(id string, v uint64) string { return fmt.Sprintf("%s@%d", id, v) }

func (s *seen) failOn(id string, v uint64, times int) {
	s.mu.Lock()
	s.fail[at(id, v)] = times
	s.mu.Unlock()
}

func (s *seen) handle(ctx context.Context, d *processor.Delivery) error {
	k := at(d.Stream.Aggregate.ID, d.Stream.Version)
	s.mu.Lock()
	gate := s.gate
	blocked := gate != nil && s.block == k
	s.mu.Unlock()
	if blocked {
		s.in <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log[d.Stream.Aggregate.ID] = append(s.log[d.Stream.Aggregate.ID], d.Stream.Version)
	if c, ok := processor.CompensationFrom(ctx); ok {
		s.comps = append(s.comps, c)
	}
	if s.fail[k] > 0 {
		s.fail[k]--
		return errBoom
	}
	return nil
}

func (s *seen) versions(id string) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.log[id]...)
}

func (s *seen) releases() []processor.Compensation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []processor.Compensation
	for _, c := range s.comps {
		if c.Release {
			out = append(out, c)
		}
	}
	return out
}

// orderedEnv registers Projector.onStep Ordered (handled by s) and
// Mailer.onStep (counted) on the order aggregate, and runs the processor.
func orderedEnv(t *testing.T, s *seen, opts ...processor.Option) (*env, *processor.Processor, *counter, *processor.Holds) {
	t.Helper()
	e := newEnv(t)
	p := e.processor(opts...)
	mailer := newCounter()
	require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	require.NoError(t, p.Register(fn("Mailer", "onStep"), mailer.handle))
	run(t, p)
	hs, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	return e, p, mailer, hs
}

func holdKey(id string) string { return processor.HoldKey(ctxName, "Projector", "onStep", "order", id) }

// held returns the versions hold of order id keeps; nil if none.
func heldVersions(t *testing.T, hs *processor.Holds, id string) []uint64 {
	t.Helper()
	h, err := hs.Get(context.Background(), holdKey(id))
	if err != nil {
		require.ErrorIs(t, err, processor.ErrHoldNotFound)
		return nil
	}
	out := []uint64{}
	for _, r := range h.Held {
		out = append(out, r.Version)
	}
	return out
}

func noHold(t *testing.T, hs *processor.Holds, id string) bool {
	_, err := hs.Get(context.Background(), holdKey(id))
	return err != nil
}

var projector = info("Projector", "onStep")

// Given an Ordered function that failed on version 1 of an order, when
// versions 2 and 3 arrive, then it is not called for them, they are held
// in order, the other function gets all three, and every message is acked.
func TestOrderedHoldsLaterEventsAfterAFailure(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e, p, mailer, hs := orderedEnv(t, s)

	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	v2 := e.emit(order("o-1"), 2, ev("step", struct{}{}))
	v3 := e.emit(order("o-1"), 3, ev("step", struct{}{}))
	e.emit(order("o-2"), 1, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Projector") && e.settled("Mailer") }, waitFor, tick)

	assert.Equal(t, []uint64{1}, s.versions("o-1"), "the function ran on version 1 only")
	assert.Equal(t, []uint64{1}, s.versions("o-2"), "another aggregate is not held")
	for _, st := range []string{v1.Events[0].ID, v2.Events[0].ID, v3.Events[0].ID} {
		assert.Equal(t, 1, mailer.count(st), "the other function ran on every event")
	}
	assert.Equal(t, aggregate.StatusFailed, e.record(v1.Events[0].ID, projector).Status)
	assert.Equal(t, aggregate.State{}, e.record(v2.Events[0].ID, projector), "a held event has no record")
	h, err := hs.Get(context.Background(), holdKey("o-1"))
	require.NoError(t, err)
	assert.Equal(t, aggregate.RecordID(v1.Events[0].ID, projector), h.Head.Record)
	assert.Equal(t, uint64(1), h.Head.Version)
	assert.Equal(t, []api.HeldEvent{
		{EventID: v2.Events[0].ID, Version: 2, Seq: v2.Seq, HeldAt: t0},
		{EventID: v3.Events[0].ID, Version: 3, Seq: v3.Seq, HeldAt: t0},
	}, h.Held, "references, in version order")
	assert.Equal(t, uint64(2), p.FunctionMetrics("Projector", "onStep").Held.Load())
	list, more, err := hs.List(context.Background(), processor.HoldFilter{Context: ctxName}, 10)
	require.NoError(t, err)
	assert.False(t, more)
	require.Len(t, list, 1)
	assert.Equal(t, holdKey("o-1"), list[0].Key())
}

// Given a hold, when its head's replay succeeds, then the held events are
// given to the function in version order as releases, the hold goes, and
// the next event runs at once.
func TestOrderedReleaseInOrderOnSuccess(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e, p, _, hs := orderedEnv(t, s)
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	e.emit(order("o-1"), 3, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 2 }, waitFor, tick)

	head := aggregate.RecordID(v1.Events[0].ID, projector)
	e.clock.SetMillis(t0 + 1000)
	e.prepare(head, false)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2, 3}, s.versions("o-1"), "the head's replay, then the held events in order")
	assert.Equal(t, []processor.Compensation{{ID: head, Release: true}, {ID: head, Release: true}}, s.releases())
	assert.Equal(t, aggregate.StatusSucceeded, e.record(v1.Events[0].ID, projector).Status)
	assert.Equal(t, uint64(2), p.FunctionMetrics("Projector", "onStep").Released.Load())

	e.emit(order("o-1"), 4, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(s.versions("o-1")) == 5 }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2, 3, 4}, s.versions("o-1"))
}

// Given a release, when a held event fails, then it becomes the new head
// with its own record and the rest stay held behind it until it succeeds.
func TestOrderedFailureDuringRelease(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	s.failOn("o-1", 3, 1)
	e, _, _, hs := orderedEnv(t, s)
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	v3 := e.emit(order("o-1"), 3, ev("step", struct{}{}))
	e.emit(order("o-1"), 4, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 3 }, waitFor, tick)

	e.clock.SetMillis(t0 + 1000)
	e.prepare(aggregate.RecordID(v1.Events[0].ID, projector), false)
	require.Eventually(t, func() bool {
		h, err := hs.Get(context.Background(), holdKey("o-1"))
		return err == nil && h.Head.Version == 3 && !h.Releasing
	}, waitFor, tick)
	assert.Equal(t, []uint64{4}, heldVersions(t, hs, "o-1"), "version 4 stays held behind the new head")
	assert.Equal(t, []uint64{1, 1, 2, 3}, s.versions("o-1"))
	rec := e.record(v3.Events[0].ID, projector)
	assert.Equal(t, aggregate.StatusFailed, rec.Status, "the failed release is an ordinary record")
	hist, err := e.store.Load(context.Background(), eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType,
		ID: aggregate.RecordID(v3.Events[0].ID, projector)}, 1)
	require.NoError(t, err)
	steps, err := aggregate.StepsOf(hist)
	require.NoError(t, err)
	tl := aggregate.Timeline(steps)
	require.NotEmpty(t, tl)
	assert.Equal(t, t0+1000, tl[0].StartedAt, "the failed release's attempt has its start")

	e.clock.SetMillis(t0 + 2000)
	e.prepare(aggregate.RecordID(v3.Events[0].ID, projector), false)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2, 3, 3, 4}, s.versions("o-1"))
}

// Given a release in progress, when new events of the aggregate arrive,
// then they wait behind the release's call (a task of their lane, under
// their key), and behind the held events it has yet to give, and run
// after them, in order.
func TestOrderedNewEventsDuringRelease(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	gate := make(chan struct{})
	s.gate, s.block = gate, at("o-1", 2)
	e, _, _, hs := orderedEnv(t, s)
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	e.emit(order("o-1"), 3, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 2 }, waitFor, tick)

	e.clock.SetMillis(t0 + 1000)
	e.prepare(aggregate.RecordID(v1.Events[0].ID, projector), false)
	s.reached(t, "the release's call of version 2")
	e.emit(order("o-1"), 4, ev("step", struct{}{}))
	e.emit(order("o-1"), 5, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return e.inFlight("Projector") == 2 }, waitFor, tick, "4 and 5 are delivered and wait")
	assert.Equal(t, []uint64{1, 1}, s.versions("o-1"), "nothing runs beside the release's call")
	assert.Equal(t, []uint64{2, 3}, heldVersions(t, hs, "o-1"), "4 and 5 wait on their lane, not in the hold")
	close(gate)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") && e.settled("Projector") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2, 3, 4, 5}, s.versions("o-1"))
}

// Given a release, when the function's circuit opens in its middle (an
// operator opens it while a held event's call runs), then that call
// finishes, the next held event is refused and recorded (CircuitOpen) and
// becomes the hold's head, the rest stay held behind it; once the circuit
// closes and the refused head's replay succeeds, the release goes on in
// order, and nothing that succeeded is run again.
func TestOrderedCircuitOpensDuringRelease(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e, p, _, hs := orderedEnv(t, s)
	store, err := circuit.OpenStore(t.Context(), e.js)
	require.NoError(t, err)
	f := circuit.Function{Context: ctxName, Processor: "Projector", Name: "onStep"}
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	for v := uint64(2); v <= 5; v++ {
		e.emit(order("o-1"), v, ev("step", struct{}{}))
	}
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 4 }, waitFor, tick)

	s.mu.Lock()
	s.gate, s.block = make(chan struct{}), at("o-1", 3)
	s.mu.Unlock()
	e.clock.SetMillis(t0 + 1000)
	e.prepare(aggregate.RecordID(v1.Events[0].ID, projector), false)
	select {
	case <-s.in:
	case <-time.After(waitFor):
		t.Fatal("the release does not reach version 3")
	}
	_, _, _, err = store.Update(t.Context(), f, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "the projection store is down"})
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { st, ok := p.Circuit("Projector", "onStep"); return ok && st.Phase == circuit.Open }, waitFor, tick)
	close(s.gate)

	var v4 string
	require.Eventually(t, func() bool {
		h, err := hs.Get(context.Background(), holdKey("o-1"))
		if err != nil || h.Head.Version != 4 || h.Releasing {
			return false
		}
		v4 = h.Head.Record
		return true
	}, waitFor, tick, "the refused version 4 heads the hold")
	assert.Equal(t, []uint64{5}, heldVersions(t, hs, "o-1"), "version 5 stays held behind it")
	assert.Equal(t, []uint64{1, 1, 2, 3}, s.versions("o-1"), "4 was not called")
	r, _, err := e.svc.Get(context.Background(), v4)
	require.NoError(t, err)
	assert.Equal(t, circuit.ErrorCode, r.Error.ErrorCode)

	_, _, _, err = store.Update(t.Context(), f, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "back"})
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { st, ok := p.Circuit("Projector", "onStep"); return ok && st.Phase == circuit.Closed }, waitFor, tick)
	e.clock.SetMillis(t0 + 2000)
	e.prepare(v4, false) // as the recovery drain does once the circuit closed
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2, 3, 4, 5}, s.versions("o-1"), "in order, each once after its success")
}
