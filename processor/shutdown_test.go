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

// Stop lets a running handler finish within the shutdown timeout, then
// cancels it; its message is neither recorded nor acked, and the next
// instance handles it.
func TestStopCancelsHandlersAfterTheShutdownTimeout(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	started := make(chan struct{}, 1)
	block := func(ctx context.Context, _ *processor.Delivery) error {
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-ctx.Done() // the first call runs until cancelled
			return ctx.Err()
		}
		return nil
	}
	p1 := e.processor(processor.WithShutdownTimeout(50 * time.Millisecond))
	require.NoError(t, p1.Register(fn("Slow", "onAny"), block))
	stop := run(t, p1)
	evt := e.emit(order("o-1"), 1, ev("order_placed", struct{}{})).Events[0].ID
	<-started
	stop() // returns: the handler was cancelled after 50 ms
	waited := make(chan error, 1)
	go func() { waited <- p1.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Wait did not return after Run returned")
	}
	assert.Equal(t, uint64(0), p1.Metrics().Acked.Load())
	assert.Equal(t, uint64(1), p1.Metrics().Naked.Load(), "the interrupted message was nak'ed")
	rec := e.record(evt, info("Slow", "onAny"))
	assert.False(t, rec.Exists(), "an interrupted handler is not recorded")

	p2 := e.processor()
	require.NoError(t, p2.Register(fn("Slow", "onAny"), block))
	run(t, p2)
	require.Eventually(t, func() bool { return e.settled("Slow") }, waitFor, tick)
	assert.Equal(t, int64(2), calls.Load())
	assert.Equal(t, 0, e.recordCount(), "no record at all")
}
