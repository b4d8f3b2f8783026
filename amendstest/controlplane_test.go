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

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// A service's failure is recorded, stays FAILED until its retry is due on
// the plane's clock, and is prepared by a Tick and replayed by the service
// (issue 30, item 14).
func TestControlPlaneRetriesWhenTheTestSays(t *testing.T) {
	js := amendstest.JetStream(t)
	cp := amendstest.ControlPlane(t, js)
	svc, err := amends.New(js, "shop", amends.WithClock(cp), amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(processor.WithSleeper(noWait)))
	require.NoError(t, err)
	var failing atomic.Bool
	failing.Store(true)
	fn := processor.Function{Processor: "Mailer", Name: "confirm", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}}
	require.NoError(t, svc.Register(fn, func(context.Context, *processor.Delivery) error {
		if failing.Load() {
			return errors.New("smtp down")
		}
		return nil
	}, processor.RetrySpec(aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 60, ExecutionTimeout: 30})))
	runCtx, stopRun := context.WithCancel(t.Context())
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	st, err := svc.Append(t.Context(), "order", "o-1", 0, eventstore.NewEvent{Name: "order_placed", Body: map[string]int{"qty": 1}})
	require.NoError(t, err)
	id := aggregate.RecordID(st.Events[0].ID, aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Mailer", Name: "confirm"})
	rec := cp.WaitStatus(id, aggregate.StatusFailed)
	assert.Equal(t, int32(0), rec.State.RetryState.Retries)

	assert.Equal(t, 0, cp.Tick(), "not due yet: the plane's clock has not moved")
	cp.Advance(59 * time.Second)
	assert.Equal(t, 0, cp.Tick(), "a second early")
	cp.Advance(time.Second)
	failing.Store(false)
	assert.Equal(t, 1, cp.Tick(), "due now: prepared")
	done := cp.WaitStatus(id, aggregate.StatusSucceeded)
	assert.Equal(t, int32(1), done.State.RetryState.Retries)
	assert.Equal(t, 0, cp.Tick(), "nothing is left to retry")

}
