package wait_test

import (
	"context"
	"errors"
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

// Restart runs again after each failure, the backoff doubling to its cap,
// until failed says stop.
func TestRestartBacksOffUntilFailedSaysStop(t *testing.T) {
	var backoffs []time.Duration
	var attempts []int
	runs := 0
	wait.Restart(t.Context(), time.Millisecond, 4*time.Millisecond, func(context.Context) error {
		runs++
		return errors.New("down")
	}, func(err error, attempt int, backoff time.Duration) bool {
		require.EqualError(t, err, "down")
		attempts, backoffs = append(attempts, attempt), append(backoffs, backoff)
		return attempt < 5
	})
	assert.Equal(t, 5, runs)
	assert.Equal(t, []int{1, 2, 3, 4, 5}, attempts)
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}, backoffs)
}

// Restart returns once its context ends, without telling failed.
func TestRestartEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	wait.Restart(ctx, time.Millisecond, time.Second, func(context.Context) error {
		cancel()
		return errors.New("stopped")
	}, func(error, int, time.Duration) bool {
		t.Error("a run that ended with its context is no failure")
		return true
	})
}

// Backoff waits at least a millisecond, for any retry number (a large one
// does not overflow), and gives up with its context.
func TestBackoffWaitsAndEndsWithItsContext(t *testing.T) {
	for _, n := range []int{1, 5, 63, 1000} {
		start := time.Now()
		require.NoError(t, wait.Backoff(t.Context(), n))
		assert.GreaterOrEqual(t, time.Since(start), time.Millisecond, "retry %d", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, wait.Backoff(ctx, 3), context.Canceled)
}
