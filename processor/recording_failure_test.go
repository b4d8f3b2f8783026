package processor_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

// setWritable makes the compensation stream refuse (or accept again) every
// write: a real JetStream stream whose limit rejects new messages.
func (e *env) setWritable(ok bool) {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.store.StreamName(aggregate.Context))
	require.NoError(e.t, err)
	cfg := s.CachedInfo().Config
	if ok {
		cfg.MaxMsgs, cfg.Discard = -1, jetstream.DiscardOld
	} else {
		cfg.MaxMsgs, cfg.Discard = max(int64(s.CachedInfo().State.Msgs), 1), jetstream.DiscardNew
		if s.CachedInfo().State.Msgs == 0 {
			e.t.Fatal("setWritable(false) needs at least one message in the stream")
		}
	}
	_, err = e.js.UpdateStream(ctx, cfg)
	require.NoError(e.t, err)
}

// Recording failures lose nothing: while the compensation stream refuses
// writes, failed messages are not acked; once it accepts them again, every
// failure is recorded exactly once and every message is acked.
func TestRecordingFailuresLoseNothing(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	mailer, sibling := newCounter(), newCounter()
	mailer.failWith(failure.Unrecoverable(errBoom))
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	require.NoError(t, p.Register(fn("Mailer", "sibling"), sibling.handle))
	run(t, p)

	// One failure recorded while the stream works, so it is not empty.
	first := e.emit(order("o-0"), 1, ev("order_placed", struct{}{})).Events[0].ID
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)

	e.setWritable(false)
	const n = 20
	events := []string{first}
	for i := 1; i <= n; i++ {
		events = append(events, e.emit(order(fmt.Sprintf("o-%d", i)), 1, ev("order_placed", struct{}{})).Events[0].ID)
	}
	require.Eventually(t, func() bool { return e.rec.Metrics().RecordingFailed.Load() >= 2*n }, waitFor, tick,
		"every failure failed to record, at least twice")
	assert.False(t, e.settled("Mailer"), "messages whose failure was not recorded are not acked")
	assert.Positive(t, p.Metrics().Naked.Load())
	assert.Positive(t, p.Metrics().Outcome(processor.OutcomeRecordingFailed))

	e.setWritable(true)
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick, "every message acked once recording works")
	assert.Equal(t, n+1, e.recordCount(), "one record per failure")
	for _, evt := range events {
		id := aggregate.RecordID(evt, info("Mailer", "onPlaced"))
		st, version, err := e.svc.Get(context.Background(), id)
		require.NoError(t, err, "event %s recorded", evt)
		assert.Equal(t, aggregate.StatusFailed, st.Status)
		assert.Equal(t, uint64(1), version, "recorded exactly once: one command on the record")
		assert.GreaterOrEqual(t, sibling.count(evt), 1, "the sibling ran (again on each redelivery: at least once)")
	}
}
