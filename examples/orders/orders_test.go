package orders_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/examples/orders"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// TestWalkthrough is the story the README tells: a mail that fails is
// recorded, and replayed to the mailer alone once the mail server works.
func TestWalkthrough(t *testing.T) {
	ctx := t.Context()
	js := natstest.New(t).JetStream()
	now := time.UnixMilli(1735000000000)
	clock := aggregate.ClockFunc(func() time.Time { return now })
	mail := orders.NewFlakyServer()
	traces, err := orders.Tracing(ctx, os.Stdout) // ORDERS_TRACE=stdout prints the spans
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, traces.Shutdown(context.Background())) })
	app, err := orders.New(ctx, js, orders.Config{
		Mail: mail, Clock: clock, TracerProvider: traces.TracerProvider(),
		// Tests do not wait out backoffs.
		ProcessorOpts:   []processor.Option{processor.WithSleeper(noWait), processor.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		RecorderOptions: []recorder.Option{recorder.WithSleeper(noWait)},
	})
	require.NoError(t, err)
	errc := make(chan error, 1)
	runCtx, stopRun := context.WithCancel(context.Background())
	go func() { errc <- app.Processor.Run(runCtx) }()
	t.Cleanup(func() {
		stopRun()
		require.NoError(t, <-errc)
	})
	<-app.Processor.Ready()

	// 1. An order placed while everything works: mail, reservation, snapshot.
	placed := orders.Placed{Customer: "Ada", Email: "ada@example.com", Lines: []orders.Line{{SKU: "tea", Qty: 2}}}
	st1, err := app.Orders.Place(ctx, "o-1", placed)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(mail.Sent()) == 1 }, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, "ada@example.com: Order o-1 confirmed: 1 lines", mail.Sent()[st1.Events[0].ID])

	// 2. The mail server greylists: the mailer retries at once (3 times),
	// then the failure is recorded; the projector is unaffected.
	mail.FailWith(orders.ErrGreylisted)
	st2, err := app.Orders.Place(ctx, "o-2", orders.Placed{Customer: "Bob", Email: "bob@example.com", Lines: []orders.Line{{SKU: "cup", Qty: 1}}})
	require.NoError(t, err)
	mailer := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: orders.Context, ProcessorName: "Mailer", Name: "confirmOrder"}
	recordID := aggregate.RecordID(st2.Events[0].ID, mailer)
	var rec aggregate.State
	require.Eventually(t, func() bool {
		rec, _, err = app.Records.Get(ctx, recordID)
		return err == nil
	}, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, aggregate.StatusFailed, rec.Status)
	assert.Equal(t, aggregate.Recoverable, rec.Recoverable, "the mailer marks greylisting recoverable")
	assert.Equal(t, "send to bob@example.com: 451 greylisted, try again later", rec.Error.ErrorMsg)
	assert.Equal(t, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}, rec.RetrySpec)
	assert.Equal(t, st2.Seq, rec.EventID.Seq)
	assert.Equal(t, 1+4, mail.Tries(), "o-1's mail, then o-2's first try and 3 immediate retries")
	require.Eventually(t, func() bool {
		lines, err := app.Inventory.Reserved(ctx, "o-2")
		return err == nil && len(lines) == 1
	}, 30*time.Second, 5*time.Millisecond, "the projector reserved o-2's stock")
	projectorCalls := app.Processor.FunctionMetrics("InventoryProjector", "onPlaced").Calls.Load()

	// 3. The mail server recovers; the scheduler (here: the test) prepares
	// the record, and the processor replays o-2's event to the mailer only.
	mail.FailWith(nil)
	_, err = app.Records.Execute(ctx, recordID, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, _, err = app.Records.Get(ctx, recordID)
		return err == nil && rec.Status == aggregate.StatusSucceeded
	}, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, "bob@example.com: Order o-2 confirmed: 1 lines", mail.Sent()[st2.Events[0].ID])
	assert.Equal(t, projectorCalls, app.Processor.FunctionMetrics("InventoryProjector", "onPlaced").Calls.Load(),
		"the replay did not run the projector again")

	// 4. A full mailbox is unrecoverable: no immediate retry, and the
	// scheduler will leave the record to an operator.
	mail.FailWith(orders.ErrMailboxFull)
	tries := mail.Tries()
	st3, err := app.Orders.Place(ctx, "o-3", orders.Placed{Customer: "Cy", Email: "cy@example.com"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, _, err = app.Records.Get(ctx, aggregate.RecordID(st3.Events[0].ID, mailer))
		return err == nil
	}, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, aggregate.Unrecoverable, rec.Recoverable)
	assert.False(t, rec.Schedulable(now.Add(time.Hour)), "the scheduler skips unrecoverable records")
	assert.Equal(t, tries+1, mail.Tries(), "not retried at once")

	// The snapshot function kept each order's latest state.
	_, err = app.Orders.Ship(ctx, "o-1", "DHL")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		snap, err := processor.ReadSnapshot(ctx, app.Snapshots, eventstore.AggregateID{Context: orders.Context, Type: orders.AggregateType, ID: "o-1"})
		return err == nil && snap.Version == 2
	}, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, uint64(2), app.Recorder.Metrics().Recorded.Load(), "two failures recorded in all")
}
