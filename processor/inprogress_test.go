package processor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/processor"
)

// A handler that runs for several AckWaits keeps its message: it is not
// redelivered while it runs.
func TestLongHandlerKeepsItsMessage(t *testing.T) {
	// Heartbeats go out every third of AckWait; the 2 s AckWait leaves a
	// late heartbeat over a second of slack on a busy machine.
	const ackWait = 2 * time.Second
	e := newEnv(t)
	p := e.processor(processor.WithAckWait(ackWait))
	release := make(chan struct{})
	var calls atomic.Int64
	require.NoError(t, p.Register(fn("Slow", "onAny"), func(ctx context.Context, _ *processor.Delivery) error {
		calls.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	run(t, p)
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return calls.Load() == 1 }, waitFor, tick)
	require.Never(t, func() bool { return calls.Load() > 1 }, 3*ackWait, 20*time.Millisecond,
		"not redelivered while the handler runs")
	close(release)
	require.Eventually(t, func() bool { return e.settled("Slow") }, waitFor, tick)
	assert.Equal(t, int64(1), calls.Load())
	assert.Equal(t, uint64(1), p.Metrics().Delivered.Load(), "delivered once")
}
