package processor_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/processor"
)

func bufferLogger(level slog.Level) (*testlog.Buffer, processor.Option) {
	buf := &testlog.Buffer{}
	return buf, processor.WithLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})))
}

// Start returns once the processor is ready; Wait returns Run's result
// after Stop. Start returns the error when Run cannot start.
func TestStartAndWait(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	c := newCounter()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), c.handle))
	ctx, stop := context.WithCancel(t.Context())
	require.NoError(t, p.Start(ctx))
	select {
	case <-p.Ready():
	default:
		t.Fatal("Start returned before the processor was ready")
	}
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return c.total.Load() == 1 }, waitFor, tick)
	stop()
	require.NoError(t, p.Wait())
	require.NoError(t, p.Wait(), "Wait may be called again")

	// A context that has ended before the processor is ready.
	p = e.processor()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), c.handle))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := p.Start(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, err, p.Wait(), "Wait returns what Run returned")
}

// Each in-process retry is logged at Debug, and so is a recorded final
// failure (amends has it in hand; the summary counts it at Info); without
// a recorder Run warns at start and the failure is a Warn.
func TestRetryAndFailureLogs(t *testing.T) {
	e := newEnv(t)
	logs, logOpt := bufferLogger(slog.LevelDebug)
	p := e.processor(logOpt)
	c := newCounter()
	c.failWith(failure.Recoverable(errors.New("451 greylisted")))
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), c.handle))
	run(t, p)
	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { rec := e.record(st.Events[0].ID, info("Mailer", "onPlaced")); return rec.Exists() }, waitFor, tick)
	require.Eventually(t, func() bool { return len(logs.Lines("level=DEBUG", "function failed")) == 1 }, waitFor, tick)
	assert.Empty(t, logs.Lines("level=INFO", "function failed"), "a recorded failure is no Info line of its own")
	retries := logs.Lines("level=DEBUG", "retrying in process", "function=onPlaced")
	require.Len(t, retries, 3, "one line per immediate retry:\n%s", logs)
	assert.Contains(t, retries[0], "retry=1 of=3")
	assert.Contains(t, retries[2], "retry=3 of=3")
	assert.Contains(t, logs.Lines("function failed")[0], "outcome=RECORDED")
	assert.Empty(t, logs.Lines("no recorder"))

	logs, logOpt = bufferLogger(slog.LevelInfo)
	bare, err := processor.New(e.js, e.store, ctxName, logOpt, processor.WithSleeper(e.sleeps.Sleep))
	require.NoError(t, err)
	require.NoError(t, bare.Register(fn("Audit", "onPlaced"), newCounter().handle))
	run(t, bare)
	require.Len(t, logs.Lines("level=WARN", "no recorder", "FAILURE_UNRECORDED"), 1, "a processor with functions and no recorder says so:\n%s", logs)
}

// Stopping is logged, and so is cancelling the handlers the shutdown
// timeout caught.
func TestShutdownLogs(t *testing.T) {
	e := newEnv(t)
	logs, logOpt := bufferLogger(slog.LevelInfo)
	started := make(chan struct{})
	var once sync.Once
	block := func(ctx context.Context, _ *processor.Delivery) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return ctx.Err()
	}
	p := e.processor(logOpt, processor.WithShutdownTimeout(10*time.Millisecond))
	require.NoError(t, p.Register(fn("Slow", "onAny"), block))
	stop := run(t, p)
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	<-started
	stop()
	assert.Len(t, logs.Lines("level=INFO", "stopping", "shutdownTimeout=10ms"), 1, "%s", logs)
	assert.Len(t, logs.Lines("level=WARN", "cancelling the handlers still running"), 1, "%s", logs)
}
