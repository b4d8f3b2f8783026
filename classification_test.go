package amends_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends"
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/amendstest"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

// errBadAddress is a failure of the event itself: retrying cannot help.
var errBadAddress = errors.New("the order's e-mail address is invalid")

// The classification table of docs/embedding.md, row by row: what a
// function returns decides the immediate retries, the record's
// recoverability (what the scheduler retries) and whether the failure
// counts for the circuit.
func TestClassificationAsDocumented(t *testing.T) {
	ctx := t.Context()
	js := amendstest.JetStream(t)
	svc, err := amends.New(js, "shop",
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		amends.WithProcessorOptions(
			processor.WithSleeper(noWait),
			processor.WithImmediateRetry(processor.Retry{Retries: 2, Backoff: processor.Backoff{Min: time.Millisecond}}),
			// A short streak, so that four distinct failed events open it.
			processor.WithCircuitPolicy(circuit.Policy{ConsecutiveFailures: 4})))
	require.NoError(t, err)

	var mu sync.Mutex
	calls := map[[2]string]int{} // by function and event
	register := func(name string, fail func() error) processor.Function {
		fn := processor.Function{Processor: name, Name: "handle", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}}
		require.NoError(t, svc.Register(fn, func(_ context.Context, d *processor.Delivery) error {
			mu.Lock()
			calls[[2]string{name, d.Event.ID}]++
			mu.Unlock()
			return fail()
		}))
		return fn
	}
	// A plain error: UNKNOWN.
	plain := register("Plain", func() error { return errors.New("smtp: connection refused") })
	// Marked recoverable (a timeout is too): retried at once.
	flaky := register("Flaky", func() error { return failure.Recoverable(errors.New("451 greylisted")) })
	// Bad input, marked unrecoverable: about the event, not the dependency.
	strict := register("Strict", func() error { return failure.Unrecoverable(fmt.Errorf("order: %w", errBadAddress)) })
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	const events = 4
	var ids []string
	appendOne := func(i int) {
		st, err := svc.Append(ctx, "order", fmt.Sprintf("o-%d", i), 0, eventstore.NewEvent{Name: "order_placed", Body: map[string]int{"n": i}})
		require.NoError(t, err)
		ids = append(ids, st.Events[0].ID)
	}
	record := func(eventID string, fn processor.Function) aggregate.State {
		var rec aggregate.State
		require.Eventually(t, func() bool {
			var err error
			rec, _, err = svc.Records.Get(ctx, svc.RecordID(eventID, fn))
			return err == nil && rec.Exists()
		}, 30*time.Second, 5*time.Millisecond, "%s's failure of event %s is recorded", fn.Processor, eventID)
		return rec
	}
	// The first event's calls end (their records exist) before the others
	// are appended: the failures of four distinct events open the
	// circuits, and a retry that met an open circuit would not be made.
	appendOne(0)
	for _, fn := range []processor.Function{plain, flaky, strict} {
		record(ids[0], fn)
	}
	for i := 1; i < events; i++ {
		appendOne(i)
	}
	for _, id := range ids {
		r := record(id, plain)
		assert.Equal(t, aggregate.RecoverabilityUnknown, r.Recoverable, "a plain error is UNKNOWN")
		assert.Equal(t, "Unclassified", r.Error.ErrorCode)
		assert.True(t, r.Recoverable.AutoRetried(), "the scheduler retries an UNKNOWN record")

		r = record(id, flaky)
		assert.Equal(t, aggregate.Recoverable, r.Recoverable)
		assert.True(t, r.Recoverable.AutoRetried())

		r = record(id, strict)
		assert.Equal(t, aggregate.Unrecoverable, r.Recoverable, "bad input is UNRECOVERABLE")
		assert.False(t, r.Recoverable.AutoRetried(), "the scheduler never retries it: an operator decides")
	}
	mu.Lock()
	first := ids[0] // the later events' calls may meet an open circuit
	assert.Equal(t, 1, calls[[2]string{"Plain", first}], "a plain error is not retried at once")
	assert.Equal(t, 3, calls[[2]string{"Flaky", first}], "a recoverable error is retried at once (2 retries)")
	for _, id := range ids {
		assert.Equal(t, 1, calls[[2]string{"Strict", id}], "an unrecoverable error is not retried at once")
	}
	mu.Unlock()

	phase := func(fn processor.Function) circuit.Phase {
		st, _ := svc.Circuit(fn.Processor, fn.Name)
		return st.Phase
	}
	require.Eventually(t, func() bool { return phase(plain) == circuit.Open && phase(flaky) == circuit.Open }, 30*time.Second, 5*time.Millisecond,
		"plain and recoverable failures count for the circuit: 4 distinct events open it")
	assert.Equal(t, circuit.Closed, phase(strict), "unrecoverable failures are about their events: the circuit stays closed")
}
