package processor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/processor"
)

// ranged returns the versions s got from range replay id, in call order.
func (s *seen) ranged(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.comps {
		if c.Request == id {
			n++
		}
	}
	return n
}

func rangeEnv(t *testing.T, s *seen, opts ...processor.Option) (*env, *processor.Processor, *processor.Replays) {
	t.Helper()
	e := newEnv(t)
	p := e.processor(append(opts, processor.WithRangeReplays())...)
	require.NoError(t, p.Register(fn("Projector", "onStep", "step"), s.handle))
	rs, err := processor.OpenReplays(t.Context(), e.js, 1)
	require.NoError(t, err)
	return e, p, rs
}

// runWithSteps runs p and has it handle versions 1..n of order o-1.
func runWithSteps(t *testing.T, e *env, p *processor.Processor, n uint64) func() {
	t.Helper()
	stop := run(t, p)
	for v := uint64(1); v <= n; v++ {
		e.emit(order("o-1"), v, ev("step", struct{}{}))
	}
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
	return stop
}

func byAggregate(id string, from, to uint64) api.Replay {
	return api.Replay{ID: id, Context: ctxName, Processor: "Projector", Function: "onStep",
		AggregateType: "order", AggregateID: "o-1", FromVersion: from, ToVersion: to, Rate: 50,
		Actor: "alice", Reason: "projection bug fixed", Created: t0}
}

func done(t *testing.T, rs *processor.Replays, id string) bool {
	r, err := rs.Get(context.Background(), id)
	return err == nil && r.Status == processor.ReplayDone
}

// Given committed versions 1..5 of an order, when an operator asks for a
// dry run of versions 2..4 and then the replay, then the dry run lists
// them without running anything, and the replay gives them to the one
// function in order at the rate asked, records the one that fails as an
// ordinary record, and ends DONE with its counts.
func TestRangeReplayByAggregateWithDryRun(t *testing.T) {
	s := newSeen()
	e, p, rs := rangeEnv(t, s)
	run(t, p)
	var v3 string
	for v := uint64(1); v <= 5; v++ {
		st := e.emit(order("o-1"), v, ev("step", struct{}{}))
		if v == 3 {
			v3 = st.Events[0].ID
		}
	}
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, s.versions("o-1"))

	plan, err := processor.Plan(context.Background(), e.js, e.store, byAggregate("r-1", 2, 4), 10)
	require.NoError(t, err)
	require.Equal(t, 3, plan.Count)
	assert.Equal(t, []uint64{2, 3, 4}, []uint64{plan.Events[0].Version, plan.Events[1].Version, plan.Events[2].Version})
	assert.Len(t, s.versions("o-1"), 5, "a dry run runs nothing")

	s.failOn("o-1", 3, 1)
	before := len(e.sleeps.All())
	r, created, err := rs.Submit(context.Background(), byAggregate("r-1", 2, 4))
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, processor.ReplayPending, r.Status)
	require.Eventually(t, func() bool { return done(t, rs, "r-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 2, 3, 4}, s.versions("o-1"), "versions 2..4 again, in order, to this function")
	r, err = rs.Get(context.Background(), "r-1")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), r.Replayed)
	assert.Equal(t, uint64(1), r.Failed)
	assert.Equal(t, uint64(5), r.Next)
	assert.Equal(t, 3, s.ranged("r-1"), "CompensationFrom names the request")
	assert.Equal(t, aggregate.StatusFailed, e.record(v3, info("Projector", "onStep")).Status, "the failure is an ordinary record")
	var paced int
	for _, d := range e.sleeps.All()[before:] {
		if d == 20*time.Millisecond {
			paced++
		}
	}
	assert.Equal(t, 3, paced, "one wait of 1/rate before each event")
}

// Given a live call of an order's event still running, when a range
// replay of the same order and function starts, then its calls wait
// behind the live call (tasks of one key on the aggregate's lane) and run
// after it, never beside it.
func TestRangeReplayWaitsForTheLiveCallOfItsAggregate(t *testing.T) {
	s := newSeen()
	e, p, rs := rangeEnv(t, s)
	runWithSteps(t, e, p, 3)
	gate := s.hold("o-1", 4)
	e.emit(order("o-1"), 4, ev("step", struct{}{}))
	s.reached(t, "the live call of version 4")

	before := len(e.sleeps.All())
	_, _, err := rs.Submit(context.Background(), byAggregate("r-w", 1, 3))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return slices.Contains(e.sleeps.All()[before:], 20*time.Millisecond)
	}, waitFor, tick, "the replay paces its first event")
	require.Never(t, func() bool { return s.ranged("r-w") > 0 }, 200*time.Millisecond, tick, "no replayed call beside the live one")
	close(gate)
	require.Eventually(t, func() bool { return done(t, rs, "r-w") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2, 3, 4, 1, 2, 3}, s.versions("o-1"), "the live call, then the replay")
	assert.Equal(t, 3, s.ranged("r-w"))
}

// Given the function's live consumer deleted (its lanes gone until the
// processor creates it again), when a range replay runs, then its events
// wait for the new lanes and the replay finishes.
func TestRangeReplayOutlivesALostConsumer(t *testing.T) {
	s := newSeen()
	e, p, rs := rangeEnv(t, s)
	runWithSteps(t, e, p, 3)
	require.NoError(t, e.js.DeleteConsumer(t.Context(), e.store.StreamName(ctxName), processor.DurableName(ctxName, "Projector")))
	_, _, err := rs.Submit(context.Background(), byAggregate("r-lost", 1, 3))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return done(t, rs, "r-lost") }, waitFor, tick)
	assert.Equal(t, 3, s.ranged("r-lost"), "each event of the range once")
	r, err := rs.Get(context.Background(), "r-lost")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), r.Replayed)
	// The new consumer starts over, so the live events come again too.
}

// Given a replay request, when the same id is sent again, then it is not
// run twice; the same id for another selection is refused.
func TestRangeReplayIdempotentByRequestID(t *testing.T) {
	s := newSeen()
	e, p, rs := rangeEnv(t, s)
	runWithSteps(t, e, p, 3)
	_, created, err := rs.Submit(context.Background(), byAggregate("r-2", 1, 3))
	require.NoError(t, err)
	require.True(t, created)
	require.Eventually(t, func() bool { return done(t, rs, "r-2") }, waitFor, tick)
	r, created, err := rs.Submit(context.Background(), byAggregate("r-2", 1, 3))
	require.NoError(t, err)
	assert.False(t, created, "the same request again is the stored one")
	assert.Equal(t, processor.ReplayDone, r.Status)
	_, _, err = rs.Submit(context.Background(), byAggregate("r-2", 1, 2))
	require.ErrorIs(t, err, processor.ErrReplayConflict)
	e.emit(order("o-1"), 4, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(s.versions("o-1")) == 7 }, waitFor, tick)
	assert.Equal(t, 3, s.ranged("r-2"), "replayed once")
	_, _, err = rs.Submit(context.Background(), api.Replay{ID: "r-3", Context: ctxName, Processor: "Projector", Function: "onStep", FromSeq: 2, ToSeq: 1, Actor: "a", Reason: "r"})
	require.ErrorIs(t, err, processor.ErrInvalidOption)
	assert.Contains(t, err.Error(), "must not be before the first")
}

// Given a range replay the processor was stopped in, when a processor
// starts again, then it resumes from the recorded progress and finishes.
func TestRangeReplayResumesAfterRestart(t *testing.T) {
	s := newSeen()
	e, p, rs := rangeEnv(t, s, processor.WithShutdownTimeout(0))
	stop := runWithSteps(t, e, p, 4)
	s.hold("o-1", 3) // never opened: the stop cancels the call
	_, _, err := rs.Submit(context.Background(), byAggregate("r-4", 1, 4))
	require.NoError(t, err)
	s.reached(t, "the replay's call of version 3")
	stop()
	r, err := rs.Get(context.Background(), "r-4")
	require.NoError(t, err)
	assert.Equal(t, processor.ReplayRunning, r.Status)
	assert.Equal(t, uint64(3), r.Next, "versions 1 and 2 are done")

	s.mu.Lock()
	s.gate = nil
	s.mu.Unlock()
	e.clock.SetMillis(t0 + 31_000)
	p2 := e.processor(processor.WithRangeReplays())
	require.NoError(t, p2.Register(fn("Projector", "onStep", "step"), s.handle))
	run(t, p2)
	require.Eventually(t, func() bool { return done(t, rs, "r-4") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2, 3, 4, 1, 2, 3, 4}, s.versions("o-1"))
}

// Given events of two names over two aggregates, when an operator replays
// one event name over a sequence range, then only those go to the function.
func TestRangeReplayByEventNameOverSequences(t *testing.T) {
	s := newSeen()
	e := newEnv(t)
	p := e.processor(processor.WithRangeReplays())
	require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle))
	rs, err := processor.OpenReplays(t.Context(), e.js, 1)
	require.NoError(t, err)
	run(t, p)
	first := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-2"), 1, ev("paid", struct{}{}))
	e.emit(order("o-2"), 2, ev("step", struct{}{}))
	last := e.emit(order("o-1"), 2, ev("paid", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
	req := api.Replay{ID: "r-5", Context: ctxName, Processor: "Projector", Function: "onStep",
		FromSeq: first.Seq, ToSeq: last.Seq, EventNames: []string{"paid"}, Actor: "alice", Reason: "re-project payments"}
	plan, err := processor.Plan(context.Background(), e.js, e.store, req, 10)
	require.NoError(t, err)
	assert.Equal(t, 2, plan.Count)
	_, _, err = rs.Submit(context.Background(), req)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return done(t, rs, "r-5") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2, 1}, s.versions("o-2"))
	assert.Equal(t, []uint64{1, 2, 2}, s.versions("o-1"))
	assert.Equal(t, 2, s.ranged("r-5"))
}
