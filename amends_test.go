package amends_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends"
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/amendstest"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// New wires store, records, recorder and processor: a failure is
// recorded with the clock's time, and its replay reports back to the
// record through the same chain.
func TestNewWiresTheChain(t *testing.T) {
	ctx := t.Context()
	js := amendstest.JetStream(t)
	now := time.UnixMilli(1735000000000)
	svc, err := amends.New(js, "shop",
		amends.WithClock(aggregate.ClockFunc(func() time.Time { return now })),
		amends.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
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
	}))
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, svc.Start(runCtx))
	t.Cleanup(func() { stopRun(); require.NoError(t, svc.Wait()) })

	st, err := svc.Append(ctx, "order", "o-1", 0, eventstore.NewEvent{Name: "order_placed", Body: map[string]int{"qty": 1}})
	require.NoError(t, err)
	assert.Equal(t, eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}, st.Aggregate)
	assert.Equal(t, now.UnixMilli(), st.CreateTime)

	id := svc.RecordID(st.Events[0].ID, fn)
	assert.Equal(t, aggregate.RecordID(st.Events[0].ID, aggregate.FunctionInfo{ContextName: "shop", ProcessorName: "Mailer", Name: "confirm"}), id,
		"the service's RecordID is the recorder's")
	var rec aggregate.State
	require.Eventually(t, func() bool { rec, _, err = svc.Records.Get(ctx, id); return err == nil }, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, "Unclassified", rec.Error.ErrorCode, "a plain error has the neutral code")
	assert.Equal(t, now.UnixMilli(), rec.ExecuteAt, "the processor and recorder used the clock")
	// The recorder counts the record once its create is acknowledged,
	// which may be after a reader sees it.
	require.Eventually(t, func() bool { return svc.Recorder.Metrics().Recorded.Load() == 1 }, 30*time.Second, 5*time.Millisecond)

	failing.Store(false)
	_, err = svc.Records.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, _, err = svc.Records.Get(ctx, id)
		return err == nil && rec.Status == aggregate.StatusSucceeded
	}, 30*time.Second, 5*time.Millisecond, "the replay consumer runs on the recorder")
}

func TestNewRejects(t *testing.T) {
	_, err := amends.New(nil, "shop")
	require.ErrorIs(t, err, processor.ErrInvalidOption)
	assert.Equal(t, "the JetStream context is nil; connect to NATS and call jetstream.New first: processor: invalid option", err.Error())

	js := amendstest.JetStream(t)
	_, err = amends.New(js, "bad.context")
	require.ErrorIs(t, err, processor.ErrInvalidOption)
	assert.Equal(t, `context "bad.context" has '.' at byte 3; only [A-Za-z0-9_-] are allowed: processor: invalid option`, err.Error())
	_, err = amends.New(js, "shop", amends.WithStoreOptions(jsstore.WithReplicas(9)))
	require.ErrorIs(t, err, jsstore.ErrInvalidOption)
	_, err = amends.New(js, "shop", amends.WithProcessorOptions(processor.WithConcurrency(0)))
	require.ErrorIs(t, err, processor.ErrInvalidOption)
}

// A service wires the chain in one call, registers its functions, starts
// and appends. It needs a NATS server, so it only compiles;
// TestNewWiresTheChain and examples/billing run the real thing.
func Example() {
	ctx := context.Background()
	var js jetstream.JetStream // connected to NATS with JetStream
	svc, err := amends.New(js, "billing")
	if err != nil {
		panic(err)
	}
	type invoice struct{ Email string }
	send := func(ctx context.Context, d *processor.Delivery, inv invoice) error {
		return failure.Recoverable(errors.New("451 greylisted")) // retried at once, then recorded
	}
	if err := svc.Register(processor.Function{Processor: "Emailer", Name: "sendInvoice",
		AggregateTypes: []string{"invoice"}, Events: []string{"invoice_issued"}}, processor.HandleBody(send)); err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(ctx)
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { stop(); _ = svc.Wait() }()
	_, err = svc.Append(ctx, "invoice", "inv-1", 0, eventstore.NewEvent{Name: "invoice_issued", Body: invoice{Email: "ada@example.com"}})
	if err != nil {
		panic(err)
	}
}
