package processor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// prepare sends PrepareCompensation (or ForcePrepare) to a record.
func (e *env) prepare(id string, force bool) int32 {
	e.t.Helper()
	var c aggregate.Command = aggregate.PrepareCompensation{}
	if force {
		c = aggregate.ForcePrepareCompensation{}
	}
	res, err := e.svc.Execute(context.Background(), id, c, aggregate.Meta{Actor: "test"})
	require.NoError(e.t, err)
	return res.State.Attempt()
}

// failedMailer registers Mailer.onPlaced on p, failing, runs p, and
// emits order o-1: it returns the mailer, the event and the record, once
// the record is FAILED.
func (e *env) failedMailer(p *processor.Processor) (mailer *counter, evt, id string) {
	e.t.Helper()
	mailer = newCounter()
	mailer.failWith(errBoom)
	require.NoError(e.t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(e.t, p)
	evt = e.emit(order("o-1"), 1, ev("order_placed", struct{}{})).Events[0].ID
	require.Eventually(e.t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusFailed }, waitFor, tick)
	return mailer, evt, aggregate.RecordID(evt, info("Mailer", "onPlaced"))
}

// A prepared record replays to only its function; success → SUCCEEDED,
// failure → FAILED with the new error.
func TestReplayRunsOnlyTheRecordedFunction(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	mailer, sibling, projector := newCounter(), newCounter(), newCounter()
	mailer.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	require.NoError(t, p.Register(fn("Mailer", "sibling"), sibling.handle))
	require.NoError(t, p.Register(fn("Projector", "onPlaced"), projector.handle))
	run(t, p)

	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	evt := st.Events[0].ID
	require.Eventually(t, func() bool { return e.settled("Mailer") && e.settled("Projector") }, waitFor, tick)
	id := aggregate.RecordID(evt, info("Mailer", "onPlaced"))
	require.Equal(t, aggregate.StatusFailed, e.record(evt, info("Mailer", "onPlaced")).Status)

	// Replay fails again, with another error.
	e.clock.SetMillis(t0 + 1000)
	mailer.failWith(errors.New("smtp down"))
	attempt := e.prepare(id, false)
	require.Eventually(t, func() bool {
		return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusFailed && mailer.count(evt) == 2
	}, waitFor, tick)
	rec := e.record(evt, info("Mailer", "onPlaced"))
	assert.Equal(t, "smtp down", rec.Error.ErrorMsg, "the record holds the new error")
	assert.Equal(t, int32(1), rec.Attempt())

	// Replay succeeds.
	mailer.succeed()
	e.clock.SetMillis(t0 + 2000)
	attempt2 := e.prepare(id, false)
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, waitFor, tick)
	assert.Equal(t, t0+2000, e.record(evt, info("Mailer", "onPlaced")).ExecuteAt)

	assert.Equal(t, 3, mailer.count(evt), "the recorded function ran once per replay")
	assert.Equal(t, 1, sibling.count(evt), "a sibling in the same processor did not run again")
	assert.Equal(t, 1, projector.count(evt), "a function of another processor did not run again")
	assert.Equal(t, []processor.Compensation{{ID: id, Attempt: attempt, Prepared: 2}, {ID: id, Attempt: attempt2, Prepared: 4}}, mailer.compensations(),
		"the replays carried the compensation id, the attempt and the version of its prepare")
	assert.Equal(t, uint64(2), p.FunctionMetrics("Mailer", "onPlaced").Replayed.Load())
	assert.Equal(t, uint64(0), p.FunctionMetrics("Mailer", "sibling").Replayed.Load())
	// The recorder counts an outcome after its command is stored, so the
	// count may trail the record's status a moment.
	require.Eventually(t, func() bool { return e.rec.Metrics().Applied.Load() == 2 }, waitFor, tick, "both results applied")
}

// A stale attempt's result is rejected by the record and acked; with
// WithRecords the stale attempt is not even run.
func TestStaleAttempt(t *testing.T) {
	for _, withRecords := range []bool{false, true} {
		name := map[bool]string{false: "fenced by the record", true: "skipped before running"}[withRecords]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			mailer := newCounter()
			newProc := func() *processor.Processor {
				var opts []processor.Option
				if !withRecords {
					opts = append(opts, processor.WithRecords(nil))
				}
				p := e.processor(opts...)
				require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
				return p
			}
			mailer.failWith(errBoom)
			stop := run(t, newProc())
			evt := e.emit(order("o-1"), 1, ev("order_placed", struct{}{})).Events[0].ID
			require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
			stop()

			// Two attempts prepared while the service is down: the first times
			// out and is force-prepared again.
			id := aggregate.RecordID(evt, info("Mailer", "onPlaced"))
			require.Equal(t, int32(1), e.prepare(id, false))
			e.clock.SetMillis(t0 + 10*60*1000)
			require.Equal(t, int32(2), e.prepare(id, true))

			mailer.succeed()
			p := newProc()
			run(t, p)
			require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, waitFor, tick)
			require.Eventually(t, func() bool { return p.Metrics().Replays.Load() == 2 }, waitFor, tick)
			rec := e.record(evt, info("Mailer", "onPlaced"))
			assert.Equal(t, int32(2), rec.Attempt())
			if withRecords {
				assert.Equal(t, uint64(1), p.Metrics().ReplaysSkipped.Load(), "attempt 1 skipped")
				assert.Equal(t, 2, mailer.count(evt), "the original call and attempt 2")
			} else {
				require.Eventually(t, func() bool { return e.rec.Metrics().Stale.Load() == 1 }, waitFor, tick, "attempt 1's result rejected as stale")
				assert.Equal(t, 3, mailer.count(evt), "the original call and both attempts")
			}
			assert.Equal(t, uint64(0), p.Metrics().Naked.Load())
		})
	}
}

// A record whose function is no longer registered fails with
// FunctionNotFound, UNRECOVERABLE.
func TestReplayOfUnknownFunction(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), newCounter().handle))
	run(t, p)
	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	gone := info("Renamed", "handler")
	id := aggregate.RecordID(st.Events[0].ID, gone)
	_, err := e.svc.Execute(context.Background(), id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: st.Events[0].ID, AggregateID: aggregate.WireAggregateID{ContextName: ctxName, AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1, Seq: st.Seq},
		Function: gone, Error: aggregate.ErrorDetails{ErrorCode: "X"}, ExecuteAt: t0,
	}, aggregate.Meta{})
	require.NoError(t, err)
	e.prepare(id, false)
	require.Eventually(t, func() bool {
		rec := e.record(st.Events[0].ID, gone)
		return rec.Status == aggregate.StatusFailed && rec.Error.ErrorCode == "FunctionNotFound"
	}, waitFor, tick)
	rec := e.record(st.Events[0].ID, gone)
	assert.Equal(t, aggregate.Unrecoverable, rec.Recoverable)
	assert.Contains(t, rec.Error.ErrorMsg, "Renamed.handler is not registered")
	assert.Equal(t, uint64(1), p.Metrics().ReplaysMissing.Load())
}

// A record whose sequence no longer points at its event (e.g. a stream
// restored elsewhere) is replayed from the aggregate and version.
func TestReplayFallsBackToAggregateAndVersion(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	c := newCounter()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), c.handle))
	run(t, p)
	other := e.emit(order("o-0"), 1, ev("order_placed", struct{}{}))
	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	f := info("Mailer", "onPlaced")
	id := aggregate.RecordID(st.Events[0].ID, f)
	_, err := e.svc.Execute(context.Background(), id, aggregate.CreateExecutionFailed{
		EventID: aggregate.EventID{ID: st.Events[0].ID, AggregateID: aggregate.WireAggregateID{ContextName: ctxName, AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID},
			Version: 1, Seq: other.Seq}, // the wrong message
		Function: f, Error: aggregate.ErrorDetails{ErrorCode: "X"}, ExecuteAt: t0,
	}, aggregate.Meta{})
	require.NoError(t, err)
	e.prepare(id, false)
	require.Eventually(t, func() bool { return e.record(st.Events[0].ID, f).Status == aggregate.StatusSucceeded }, waitFor, tick)
	assert.Equal(t, 2, c.count(st.Events[0].ID), "the right event was replayed")
	assert.Equal(t, 1, c.count(other.Events[0].ID), "not the one at the recorded sequence")
}

// gatedRecords holds every record read of a replay until opened, and notes
// if it had to give up waiting.
type gatedRecords struct {
	*aggregate.Service
	open    <-chan struct{}
	gaveUp  atomic.Bool
	waiting atomic.Int64
}

func (g *gatedRecords) GetDelivered(ctx context.Context, st eventstore.Stream) (aggregate.State, uint64, error) {
	g.waiting.Add(1)
	select {
	case <-g.open:
	case <-time.After(waitFor):
		g.gaveUp.Store(true)
	}
	return g.Service.GetDelivered(ctx, st)
}

// A replay reads the original event while it reads the record, not after:
// the record's read here waits for the event's direct get to be sent.
func TestReplayReadsTheEventWhileItReadsTheRecord(t *testing.T) {
	e := newEnv(t)
	eventRead := make(chan struct{})
	records := &gatedRecords{Service: e.svc, open: eventRead}
	mailer, evt, _ := e.failedMailer(e.processor(processor.WithRecords(records)))

	var once sync.Once
	sub, err := e.nc.Subscribe("$JS.API.DIRECT.GET."+e.store.StreamName(ctxName), func(*nats.Msg) { once.Do(func() { close(eventRead) }) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, e.nc.Flush())
	mailer.succeed()
	e.prepare(aggregate.RecordID(evt, info("Mailer", "onPlaced")), false)
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, 2*waitFor, tick)
	assert.False(t, records.gaveUp.Load(), "the event's direct get was sent before the record's read returned")
	assert.Equal(t, int64(1), records.waiting.Load(), "the record was read once")
	assert.Equal(t, 2, mailer.count(evt))
}

// A record prepared elsewhere (by serve's scheduler) is replayed without
// reading the record's last message: the replay checks that the prepare
// it was delivered is still the last one (a get of the next message, which
// finds none), and the success appends without a read.
func TestAReplayDoesNotReadTheRecordItWasDelivered(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	mailer, evt, id := e.failedMailer(p)

	elsewhere, err := jsstore.New(e.js)
	require.NoError(t, err)
	scheduler := aggregate.NewService(elsewhere, aggregate.WithClock(e.clock))
	_, _, err = scheduler.Get(t.Context(), id)
	require.NoError(t, err)
	var lastGets atomic.Int64
	sub, err := e.nc.Subscribe("$JS.API.DIRECT.GET."+e.store.StreamName(aggregate.Context)+".>", func(*nats.Msg) { lastGets.Add(1) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, e.nc.Flush())

	mailer.succeed()
	e.clock.SetMillis(t0 + 1000)
	_, err = scheduler.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return mailer.count(evt) == 2 && e.rec.Metrics().Applied.Load() == 1 }, waitFor, tick, "replayed and recorded")
	require.NoError(t, e.nc.Flush())
	assert.Zero(t, lastGets.Load(), "no last message of the record was read")
	assert.Equal(t, aggregate.StatusSucceeded, e.record(evt, info("Mailer", "onPlaced")).Status)
	assert.Zero(t, p.Metrics().ReplaysSkipped.Load())
}

// failedStep runs a processor with Projector.onStep (s), whose call on
// version 1 of order o-1 fails once, emits that version, and returns once
// its record is FAILED, with the event's id.
func (e *env) failedStep(s *seen, opts ...processor.Option) (p *processor.Processor, v1 string) {
	e.t.Helper()
	p = e.processor(opts...)
	s.failOn("o-1", 1, 1)
	require.NoError(e.t, p.Register(fn("Projector", "onStep"), s.handle))
	run(e.t, p)
	v1 = e.emit(order("o-1"), 1, ev("step", struct{}{})).Events[0].ID
	require.Eventually(e.t, func() bool { return e.record(v1, projector).Status == aggregate.StatusFailed }, waitFor, tick)
	return p, v1
}

// hold makes the calls on version v of order id wait until the returned
// channel is closed; reached waits until one does.
func (s *seen) hold(id string, v uint64) chan struct{} {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate, s.block = gate, at(id, v)
	s.mu.Unlock()
	return gate
}

func (s *seen) reached(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.in:
	case <-time.After(waitFor):
		t.Fatalf("%s did not start", what)
	}
}

// Given a live call of an order's event still running, when a failed
// record of an earlier event of the same order and function is prepared,
// then the replay's call waits for the live call (the key table keeps one
// call per function and aggregate) and runs after it, never beside it.
func TestAReplayWaitsForTheLiveCallOfItsAggregate(t *testing.T) {
	e, s := newEnv(t), newSeen()
	p, v1 := e.failedStep(s)
	gate := s.hold("o-1", 2)
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	s.reached(t, "the live call of version 2")
	e.prepare(aggregate.RecordID(v1, projector), false)
	require.Eventually(t, func() bool { return p.Metrics().Replays.Load() == 1 }, waitFor, tick, "the replay has read its record and event")
	require.Never(t, func() bool { return len(s.versions("o-1")) > 1 }, 200*time.Millisecond, tick, "no replayed call beside the live one")
	close(gate)
	require.Eventually(t, func() bool { return e.record(v1, projector).Status == aggregate.StatusSucceeded }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2, 1}, s.versions("o-1"), "the live call, then the replay")
}

// Given a replay's call still running, when a new event of the same
// aggregate arrives for the same function, then its live call waits for
// the replay's (it is parked off its lane, which goes on with other
// aggregates) and runs after it.
func TestALiveCallWaitsForTheReplayOfItsAggregate(t *testing.T) {
	e, s := newEnv(t), newSeen()
	_, v1 := e.failedStep(s, processor.WithConcurrency(1)) // one lane: o-1 and o-2 share it
	gate := s.hold("o-1", 1)
	e.prepare(aggregate.RecordID(v1, projector), false)
	s.reached(t, "the replay's call")
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	e.emit(order("o-2"), 1, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(s.versions("o-2")) == 1 }, waitFor, tick, "the lane goes on with another aggregate")
	assert.Equal(t, []uint64{1}, s.versions("o-1"), "no live call beside the replay's")
	close(gate)
	require.Eventually(t, func() bool { return e.settled("Projector") && len(s.versions("o-1")) == 3 }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2}, s.versions("o-1"), "the replay, then the live call")
	require.Eventually(t, func() bool { return e.record(v1, projector).Status == aggregate.StatusSucceeded }, waitFor, tick)
}
