package processor_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

// Recorded failures are counted per function and logged at Info once a
// period, one line per function with failures: never a line per failure
// at Info, and nothing for a function without failures. The last period
// is logged when the processor stops, so no count is lost.
func TestRecordedFailuresAreSummarisedPerFunction(t *testing.T) {
	e := newEnv(t)
	logs, logOpt := bufferLogger(slog.LevelInfo)
	// A period longer than the test: the one summary comes at the stop.
	p := e.processor(logOpt, processor.WithFailureSummary(time.Hour))
	mailer, ledger, audit := newCounter(), newCounter(), newCounter()
	mailer.failWith(failure.Unrecoverable(errors.New("550 no such mailbox")))
	ledger.failWith(failure.Unrecoverable(errors.New("ledger refused")))
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	require.NoError(t, p.Register(fn("Ledger", "onPlaced"), ledger.handle))
	require.NoError(t, p.Register(fn("Audit", "onPlaced"), audit.handle))
	stop := run(t, p)
	const n = 5
	for i := range n {
		e.emit(order(fmt.Sprintf("o-%d", i)), 1, ev("order_placed", struct{}{}))
	}
	require.Eventually(t, func() bool { return e.recordCount() == 2*n }, waitFor, tick, "every failure is recorded")
	assert.Empty(t, logs.Lines("function failed"), "no Info line per recorded failure:\\n%s", logs)
	stop()

	mail := logs.Lines("level=INFO", "failures recorded", "processor=Mailer", "function=onPlaced")
	require.Len(t, mail, 1, "one summary line for Mailer:\\n%s", logs)
	assert.Contains(t, mail[0], fmt.Sprintf("recorded=%d", n))
	assert.Contains(t, mail[0], "refusedByCircuit=0")
	assert.Contains(t, mail[0], `lastErr="550 no such mailbox"`)
	require.Len(t, logs.Lines("level=INFO", "failures recorded", "processor=Ledger"), 1, "%s", logs)
	assert.Empty(t, logs.Lines("failures recorded", "processor=Audit"), "a function without failures has no line")
}

// The period is an option; 0 turns the summary off and a negative one is
// refused.
func TestFailureSummaryPeriod(t *testing.T) {
	e := newEnv(t)
	logs, logOpt := bufferLogger(slog.LevelInfo)
	p := e.processor(logOpt, processor.WithFailureSummary(20*time.Millisecond))
	c := newCounter()
	c.failWith(failure.Unrecoverable(errors.New("boom")))
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), c.handle))
	run(t, p)
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return len(logs.Lines("failures recorded", "recorded=1")) == 1 }, waitFor, tick,
		"the summary comes within a period while the processor runs")

	e = newEnv(t)
	logs, logOpt = bufferLogger(slog.LevelInfo)
	off := e.processor(logOpt, processor.WithFailureSummary(0))
	c2 := newCounter()
	c2.failWith(failure.Unrecoverable(errors.New("boom")))
	require.NoError(t, off.Register(fn("Ledger", "onPlaced"), c2.handle))
	stop := run(t, off)
	e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return e.recordCount() == 1 }, waitFor, tick)
	stop()
	assert.Empty(t, logs.Lines("failures recorded"), "0 turns the summary off:\\n%s", logs)

	_, err := processor.New(e.js, e.store, ctxName, processor.WithFailureSummary(-time.Second))
	require.ErrorIs(t, err, processor.ErrInvalidOption)
	assert.ErrorContains(t, err, "failure summary period")
}
