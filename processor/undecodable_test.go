package processor_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/processor"
)

// An undecodable message is terminated, logged with its sequence and
// counted; the events after it are processed.
func TestUndecodableMessageIsTerminated(t *testing.T) {
	e := newEnv(t)
	var logs testlog.Buffer
	p := e.processor(processor.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	c := newCounter()
	require.NoError(t, p.Register(fn("Projector", "onAny"), c.handle))
	run(t, p)

	before := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	ack, err := e.js.Publish(context.Background(), "amends.shop.order.broken", []byte("{not json"))
	require.NoError(t, err)
	after := e.emit(order("o-1"), 2, ev("order_shipped", struct{}{}))
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick, "the consumer is not blocked")

	assert.Equal(t, 1, c.count(before.Events[0].ID))
	assert.Equal(t, 1, c.count(after.Events[0].ID), "the event after the bad message was processed")
	assert.Equal(t, uint64(1), p.Metrics().Undecodable.Load())
	// Terminated counts a term once it was sent, which the server may see
	// first.
	require.Eventually(t, func() bool { return p.Metrics().Terminated.Load() == 1 }, waitFor, tick, "the bad message was terminated")
	assert.Contains(t, logs.String(), "undecodable message terminated")
	assert.Contains(t, logs.String(), "seq="+itoa(ack.Sequence), "the log names the stream sequence")
}
