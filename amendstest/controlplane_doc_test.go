package amendstest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends"
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/amendstest"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
)

// ControlPlane's documentation, as written: the service runs on the
// plane's clock, a failure is recorded, Advance(3m) makes its first retry
// due, Tick prepares it and the service replays it to success.
func TestControlPlaneAsDocumented(t *testing.T) {
	ctx := t.Context()
	js := amendstest.JetStream(t)
	cp := amendstest.ControlPlane(t, js)
	svc, err := amends.New(js, "billing", amends.WithClock(cp), // the service under test
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(processor.WithImmediateRetry(processor.Retry{})))
	require.NoError(t, err)
	var down atomic.Bool
	down.Store(true)
	fn := processor.Function{Processor: "Emailer", Name: "send", AggregateTypes: []string{"invoice"}, Events: []string{"invoice_issued"}}
	require.NoError(t, svc.Register(fn, func(context.Context, *processor.Delivery) error {
		if down.Load() {
			return errors.New("smtp down")
		}
		return nil
	}))
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	st, err := svc.Append(ctx, "invoice", "inv-1", 0, eventstore.NewEvent{Name: "invoice_issued", Body: map[string]int{"cents": 1200}})
	require.NoError(t, err)
	id := svc.RecordID(st.Events[0].ID, fn)
	failed := cp.WaitStatus(id, aggregate.StatusFailed)
	assert.Equal(t, cp.Now().UnixMilli(), failed.State.ExecuteAt, "the record has the plane's time")
	assert.Equal(t, 0, cp.Tick(), "not due before its backoff")

	down.Store(false)
	cp.Advance(3 * time.Minute) // its first retry is due (minBackoff 180 s)
	assert.Equal(t, 1, cp.Tick(), "the scheduler prepares it")
	done := cp.WaitStatus(id, aggregate.StatusSucceeded)
	assert.Equal(t, int32(1), done.State.RetryState.Retries)
}
