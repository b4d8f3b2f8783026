package processor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
)

// Given a hold, when an operator releases it (dry run first), then the
// dry run changes nothing, and the release marks the head record resolved
// in its own history with actor and reason, never replays the head, and
// gives the held events to the function in order.
func TestOperatorReleaseWithoutReplayingTheHead(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e, _, _, hs := orderedEnv(t, s)
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	e.emit(order("o-1"), 2, ev("step", struct{}{}))
	e.emit(order("o-1"), 3, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 2 }, waitFor, tick)
	head := aggregate.RecordID(v1.Events[0].ID, projector)
	act := processor.HoldAction{Actor: "alice", Reason: "fixed the row by hand", Now: e.clock.Now()}

	_, err := hs.Release(context.Background(), holdKey("o-1"), e.svc, processor.HoldAction{Actor: "alice", Now: e.clock.Now()})
	require.ErrorIs(t, err, processor.ErrInvalidOption, "a release needs a reason")
	dry := act
	dry.DryRun = true
	plan, err := hs.Release(context.Background(), holdKey("o-1"), e.svc, dry)
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusFailed, plan.HeadStatus)
	assert.Equal(t, []string{aggregate.NameForcePrepareCompensation, aggregate.NameApplyExecutionSuccess}, plan.Commands)
	assert.Equal(t, aggregate.StatusFailed, e.record(v1.Events[0].ID, projector).Status, "a dry run changes nothing")
	assert.Equal(t, []uint64{2, 3}, heldVersions(t, hs, "o-1"))

	_, err = hs.Release(context.Background(), holdKey("o-1"), e.svc, act)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 2, 3}, s.versions("o-1"), "the head was not replayed; the held events ran in order")
	assert.Equal(t, aggregate.StatusSucceeded, e.record(v1.Events[0].ID, projector).Status)
	hist, err := e.store.Load(context.Background(), aggregate.RecordAggregate(head), 1)
	require.NoError(t, err)
	require.Len(t, hist, 3, "created, prepared to resolve, success applied")
	for _, st := range hist[1:] {
		assert.Equal(t, "alice", st.Headers[aggregate.HeaderActor])
		assert.Equal(t, "fixed the row by hand", st.Headers[aggregate.HeaderReason])
		assert.Equal(t, "release", st.Headers[processor.HeaderResolve])
	}
}

// Given a hold of two events, when an operator skips one (dry run first),
// then the function never gets it, the skip is kept with actor and reason,
// and the other is released in order.
func TestOperatorSkipOneHeldEvent(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	e, _, _, hs := orderedEnv(t, s)
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	v2 := e.emit(order("o-1"), 2, ev("step", struct{}{}))
	e.emit(order("o-1"), 3, ev("step", struct{}{}))
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 2 }, waitFor, tick)
	act := processor.HoldAction{Actor: "bob", Reason: "duplicate of v1", Now: e.clock.Now(), DryRun: true}

	h, err := hs.Skip(context.Background(), holdKey("o-1"), v2.Events[0].ID, act)
	require.NoError(t, err)
	assert.Len(t, h.Held, 1, "the dry run shows the hold after the skip")
	assert.Equal(t, []uint64{2, 3}, heldVersions(t, hs, "o-1"), "a dry run changes nothing")
	_, err = hs.Skip(context.Background(), holdKey("o-1"), v1.Events[0].ID, act)
	require.ErrorIs(t, err, processor.ErrNotHeld, "the head is not a held event")

	act.DryRun = false
	h, err = hs.Skip(context.Background(), holdKey("o-1"), v2.Events[0].ID, act)
	require.NoError(t, err)
	require.Len(t, h.Skipped, 1)
	assert.Equal(t, "bob", h.Skipped[0].Actor)
	assert.Equal(t, "duplicate of v1", h.Skipped[0].Reason)
	assert.Equal(t, uint64(2), h.Skipped[0].Version)

	e.clock.SetMillis(t0 + 1000)
	e.prepare(aggregate.RecordID(v1.Events[0].ID, projector), false)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 3}, s.versions("o-1"), "version 2 was skipped")
}

// Given a release that the processor was stopped in, when a new processor
// starts, then once the old claim expires it resumes the release where it
// stopped, in order, without losing an event.
func TestOrderedReleaseResumesAfterRestart(t *testing.T) {
	s := newSeen()
	s.failOn("o-1", 1, 1)
	gate := make(chan struct{})
	s.gate, s.block = gate, at("o-1", 3)
	e := newEnv(t)
	p := e.processor(processor.WithShutdownTimeout(0))
	require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	stop := run(t, p)
	hs, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	v1 := e.emit(order("o-1"), 1, ev("step", struct{}{}))
	for v := uint64(2); v <= 4; v++ {
		e.emit(order("o-1"), v, ev("step", struct{}{}))
	}
	require.Eventually(t, func() bool { return len(heldVersions(t, hs, "o-1")) == 3 }, waitFor, tick)
	e.clock.SetMillis(t0 + 1000)
	e.prepare(aggregate.RecordID(v1.Events[0].ID, projector), false)
	<-s.in // the release is in version 3
	stop()
	assert.Equal(t, []uint64{3, 4}, heldVersions(t, hs, "o-1"), "version 2 was released, 3 was interrupted")

	s.mu.Lock()
	s.gate = nil
	s.mu.Unlock()
	e.clock.SetMillis(t0 + 1000 + 31_000) // past the stopped instance's claim
	p2 := e.processor()
	require.NoError(t, p2.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
	run(t, p2)
	require.Eventually(t, func() bool { return noHold(t, hs, "o-1") }, waitFor, tick)
	assert.Equal(t, []uint64{1, 1, 2, 3, 4}, s.versions("o-1"))
}

// An Ordered function needs a recorder and records.
func TestOrderedNeedsRecorderAndRecords(t *testing.T) {
	e := newEnv(t)
	p, err := processor.New(e.js, e.store, ctxName, processor.WithRecorder(e.rec), processor.WithLogger(quietLogger()))
	require.NoError(t, err)
	require.NoError(t, p.Register(fn("Projector", "onStep"), newSeen().handle, processor.Ordered()))
	err = p.Run(context.Background())
	require.ErrorIs(t, err, processor.ErrInvalidFunction)
	assert.Contains(t, err.Error(), "WithRecords")
	require.ErrorIs(t, p.Register(fn("Projector", "other"), newSeen().handle, processor.Ordered(), processor.NoCompensation()), processor.ErrInvalidFunction)
}
