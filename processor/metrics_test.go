package processor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The replay consumer reads every command of every record, the record's
// creation included: its messages are counted apart from the function
// consumers'.
func TestReplayConsumerMessagesAreCountedApart(t *testing.T) {
	e := newEnv(t)
	mailer := newCounter()
	mailer.failWith(errBoom)
	p := e.processor()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(t, p)
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Mailer") && e.recordCount() == 1 }, waitFor, tick, "the failure is recorded")
	require.Eventually(t, func() bool { return p.Metrics().Replay.Acked.Load() >= 1 }, waitFor, tick,
		"the replay consumer received and acked the record's creation")

	m := p.Metrics()
	assert.Equal(t, uint64(1), m.Delivered.Load(), "one message on the function consumer")
	assert.Equal(t, uint64(1), m.Acked.Load(), "one ack on the function consumer: the recorded failure")
	assert.GreaterOrEqual(t, m.Replay.Delivered.Load(), m.Replay.Acked.Load())
	assert.Zero(t, m.Replays.Load(), "a creation is not a replay")
}
