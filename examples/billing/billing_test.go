package billing_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends"
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/amendstest"
	"github.com/amends-dev/amends/examples/billing"
	"github.com/amends-dev/amends/processor"
)

// noWait makes immediate retries run at once: tests do not wait out
// backoffs.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// A greylisted invoice mail is retried at once, recorded, replayed to the
// emailer alone once prepared, and its record becomes SUCCEEDED.
func TestFailureToSucceeded(t *testing.T) {
	ctx := t.Context()
	js := amendstest.JetStream(t)
	now := time.UnixMilli(1735000000000)
	mail, ledger := billing.NewFlakyMailer(4), billing.NewLedger()
	svc, err := billing.New(js, mail, ledger,
		amends.WithClock(aggregate.ClockFunc(func() time.Time { return now })),
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(processor.WithSleeper(noWait)))
	require.NoError(t, err)
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	st, err := billing.Issue(ctx, svc, "inv-1", billing.Invoice{Email: "ada@example.com", Cents: 1200})
	require.NoError(t, err)
	assert.Equal(t, now.UnixMilli(), st.CreateTime, "stamped by the service's clock")
	eventID := st.Events[0].ID
	emailer := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "billing", ProcessorName: "Emailer", Name: "sendInvoice"}
	recordID := aggregate.RecordID(eventID, emailer)

	// The first send and its 3 immediate retries are greylisted: recorded.
	var rec aggregate.State
	require.Eventually(t, func() bool {
		rec, _, err = svc.Records.Get(ctx, recordID)
		return err == nil
	}, 30*time.Second, 5*time.Millisecond, "the failure is recorded")
	assert.Equal(t, aggregate.StatusFailed, rec.Status)
	assert.Equal(t, "Greylisted", rec.Error.ErrorCode)
	assert.Equal(t, "send to ada@example.com: 451 greylisted, try again later", rec.Error.ErrorMsg)
	assert.Equal(t, aggregate.Recoverable, rec.Recoverable)
	assert.Equal(t, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}, rec.RetrySpec)
	assert.Equal(t, 4, mail.Tries(eventID))
	require.Eventually(t, func() bool { return ledger.Posted() == 1 }, 30*time.Second, 5*time.Millisecond, "the ledger posted the invoice")

	// Prepared (by the scheduler of `amends serve`, here by the test), the
	// invoice is replayed to the emailer alone, which now gets through.
	_, err = svc.Records.Execute(ctx, recordID, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, _, err = svc.Records.Get(ctx, recordID)
		return err == nil && rec.Status == aggregate.StatusSucceeded
	}, 30*time.Second, 5*time.Millisecond, "the replay succeeds")
	assert.Equal(t, "ada@example.com: Your invoice", mail.Sent(eventID))
	assert.Equal(t, 5, mail.Tries(eventID))
	assert.Equal(t, uint64(1), svc.FunctionMetrics("Ledger", "post").Calls.Load(), "the replay did not post again")
	assert.Equal(t, int64(1200), ledger.Total())
}

// The scheduler, run by the test's control plane on a clock the test moves
// (amendstest.ControlPlane), leaves the record alone until its retry is
// due, then prepares it, and the service replays it to the emailer.
func TestScheduledRetry(t *testing.T) {
	js := amendstest.JetStream(t)
	cp := amendstest.ControlPlane(t, js)
	mail, ledger := billing.NewFlakyMailer(4), billing.NewLedger()
	svc, err := billing.New(js, mail, ledger, amends.WithClock(cp),
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(processor.WithSleeper(noWait)))
	require.NoError(t, err)
	runCtx, stopRun := context.WithCancel(t.Context())
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	st, err := billing.Issue(t.Context(), svc, "inv-1", billing.Invoice{Email: "ada@example.com", Cents: 1200})
	require.NoError(t, err)
	id := svc.RecordID(st.Events[0].ID, processor.Function{Processor: "Emailer", Name: "sendInvoice"})
	cp.WaitStatus(id, aggregate.StatusFailed)
	assert.Equal(t, 0, cp.Tick(), "the retry is due in a minute")
	cp.Advance(time.Minute)
	assert.Equal(t, 1, cp.Tick(), "due: the scheduler prepares it")
	rec := cp.WaitStatus(id, aggregate.StatusSucceeded)
	assert.Equal(t, int32(1), rec.State.RetryState.Retries)
	assert.Equal(t, "ada@example.com: Your invoice", mail.Sent(st.Events[0].ID))
}

// The README's embedding section is billing.go's wiring, line for line.
func TestReadmeIsTheExample(t *testing.T) {
	src, err := os.ReadFile("billing.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	wiring := between(t, string(src), "// --- wiring (README: \"Embedding amends in a service\") ---\n", "// --- end of wiring ---")
	block := between(t, string(readme), "<!-- examples/billing/billing.go wiring -->\n```go\n", "```\n")
	assert.Equal(t, strings.TrimSpace(wiring), strings.TrimSpace(block),
		"README.md's embedding snippet differs from examples/billing/billing.go; copy the wiring over")
}

func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	require.GreaterOrEqual(t, i, 0, "marker %q not found", start)
	s = s[i+len(start):]
	j := strings.Index(s, end)
	require.GreaterOrEqual(t, j, 0, "marker %q not found", end)
	return s[:j]
}
