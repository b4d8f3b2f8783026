package wait_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/wait"
)

func TestEveryCallsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait.Every(ctx, time.Millisecond, func() { n.Add(1) })
	}()
	require.Eventually(t, func() bool { return n.Load() >= 3 }, 30*time.Second, time.Millisecond)
	cancel()
	select {
	case <-done: // it returns once the context ends
	case <-time.After(30 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, wait.Sleep(ctx, time.Hour), context.Canceled)
	assert.NoError(t, wait.Sleep(t.Context(), 0))
}
