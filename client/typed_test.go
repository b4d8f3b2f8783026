package client_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// Reads against a real server: lists page through a filter, get and
// history return the record, count and summary agree.
func TestReads(t *testing.T) {
	s := newStack(t)
	other := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Ledger", Name: "onOrderPlaced"}
	var ids []string
	for i := range 5 {
		ids = append(ids, s.create(t, i, mailer, nil))
	}
	s.create(t, 9, other, nil)
	c := s.client(t)

	q := api.Query{Filter: api.Filter{Processor: "Mailer"}, Limit: 2}
	var got []string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5, "the pages end")
		page, err := c.List(t.Context(), q)
		require.NoError(t, err)
		for _, it := range page.Items {
			got = append(got, it.ID)
			assert.Equal(t, "Mailer", it.Function.ProcessorName)
			assert.Equal(t, "o-"+it.EventID, it.Aggregate.AggregateID, "the item's aggregate is the event's")
			assert.Equal(t, "order", it.Aggregate.StoreID().Context)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	assert.Equal(t, ids, got, "every Mailer record once, oldest failure first")

	n, err := c.Count(t.Context(), api.Filter{Processor: "Ledger"})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	sum, err := c.Summary(t.Context(), api.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 6, sum.Total)
	require.Len(t, sum.Groups, 2)
	assert.Equal(t, api.FailureGroup{FunctionContext: "order", Processor: "Mailer", Function: "onOrderPlaced", ErrorCode: "Timeout",
		Total: 5, Retryable: 5, OldestFailureAt: t0, NewestFailureAt: t0 + 4}, sum.Groups[0])

	v, err := c.Get(t.Context(), ids[0])
	require.NoError(t, err)
	assert.Equal(t, ids[0], v.State.ID)
	assert.Equal(t, aggregate.StatusFailed, v.State.Status)
	h, err := c.History(t.Context(), ids[0])
	require.NoError(t, err)
	require.Len(t, h, 1)
	assert.Equal(t, aggregate.NameCreateExecutionFailed, h[0].Command)
	assert.Equal(t, "recorder", h[0].Actor)

	_, err = c.Get(t.Context(), "no-such-record")
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "an unknown id is a *client.Error: %v", err)
	assert.Equal(t, http.StatusNotFound, ce.Status)
	assert.Equal(t, "NotFound", ce.Body.Code)

	_, err = c.List(t.Context(), api.Query{Limit: api.MaxLimit + 1})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, http.StatusBadRequest, ce.Status)
	assert.Equal(t, "limit", ce.Body.Details["field"])
}

// Each operator command has a typed method whose effect shows in the
// record, with the reason in its history and idempotency keys honoured.
func TestCommands(t *testing.T) {
	s := newStack(t)
	id := s.create(t, 1, mailer, &aggregate.RetrySpec{MaxRetries: 1, MinBackoff: 60, ExecutionTimeout: 30})
	c := s.client(t)
	ctx := t.Context()

	res, err := c.Prepare(ctx, id, client.CommandOptions{Reason: "smtp is back", IdempotencyKey: "key-1"})
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusPrepared, res.State.Status)
	assert.False(t, res.Duplicate)
	again, err := c.Prepare(ctx, id, client.CommandOptions{Reason: "smtp is back", IdempotencyKey: "key-1"})
	require.NoError(t, err)
	assert.True(t, again.Duplicate, "the same key runs the command once")
	assert.Equal(t, res.Version, again.Version)

	_, err = c.Prepare(ctx, id, client.CommandOptions{})
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, http.StatusConflict, ce.Status, "a PREPARED record that has not timed out refuses a prepare")

	res, err = c.ChangeRetrySpec(ctx, id, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 10, ExecutionTimeout: 20}, client.CommandOptions{})
	require.NoError(t, err)
	assert.Equal(t, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 10, ExecutionTimeout: 20}, res.State.RetrySpec)
	_, err = c.ChangeRetrySpec(ctx, id, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 10}, client.CommandOptions{})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "executionTimeout", ce.Body.Details["field"])

	res, err = c.MarkRecoverable(ctx, id, aggregate.Unrecoverable, client.CommandOptions{})
	require.NoError(t, err)
	assert.Equal(t, aggregate.Unrecoverable, res.State.Recoverable)

	moved := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer2", Name: "onOrderPlaced"}
	_, err = c.ChangeFunction(ctx, id, moved, "", client.CommandOptions{})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "reason", ce.Body.Details["field"], "change-function needs a reason")
	res, err = c.ChangeFunction(ctx, id, moved, "processor renamed", client.CommandOptions{})
	require.NoError(t, err)
	assert.Equal(t, moved, res.State.Function)

	_, err = c.ForcePrepare(ctx, id, "one", client.CommandOptions{Reason: "another"})
	assert.ErrorIs(t, err, client.ErrInvalidRequest, "two reasons are refused before sending")
	_, err = c.ForcePrepare(ctx, id, "", client.CommandOptions{})
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, "reason", ce.Body.Details["field"], "force-prepare needs a reason")

	h, err := c.History(ctx, id)
	require.NoError(t, err)
	var commands, reasons []string
	for _, e := range h {
		commands = append(commands, e.Command)
		reasons = append(reasons, e.Reason)
	}
	assert.Equal(t, []string{aggregate.NameChangeFunction, aggregate.NameMarkRecoverable, aggregate.NameApplyRetrySpec, aggregate.NamePrepareCompensation, aggregate.NameCreateExecutionFailed}, commands, "newest first")
	assert.Equal(t, []string{"processor renamed", "", "", "smtp is back", ""}, reasons)
}

// A batch reports its start and every outcome to the progress callbacks,
// in order, and returns the result; the same request id replays it.
func TestBatchProgress(t *testing.T) {
	s := newStack(t)
	for i := range 3 {
		s.create(t, i, mailer, nil)
	}
	c := s.client(t)

	var (
		mu      sync.Mutex
		starts  []api.BatchStart
		records []string
	)
	p := client.BatchProgress{
		Start: func(st api.BatchStart) { mu.Lock(); defer mu.Unlock(); starts = append(starts, st) },
		Outcome: func(o api.BatchOutcome) {
			mu.Lock()
			defer mu.Unlock()
			records = append(records, o.ID+" "+o.Outcome)
		},
	}
	req := api.BatchRequest{Filter: api.Filter{Processor: "Mailer"}, Limit: 2, DryRun: true}
	res, err := c.BatchPrepare(t.Context(), req, p)
	require.NoError(t, err)
	assert.Equal(t, []api.BatchStart{{Matched: 3, Total: 2}}, starts)
	assert.Equal(t, map[string]int{api.OutcomeWould: 2}, res.Counts)
	var want []string
	for _, o := range res.Records {
		want = append(want, o.ID+" "+o.Outcome)
	}
	assert.Equal(t, want, records, "each outcome reached the callback, in the result's order")

	starts, records = nil, nil
	req = api.BatchRequest{Filter: api.Filter{Processor: "Mailer"}, RequestID: "batch-1", Reason: "smtp is back", RatePerSecond: api.MaxBatchRate}
	res, err = c.BatchForcePrepare(t.Context(), req, p)
	require.NoError(t, err)
	assert.Equal(t, string(api.CommandForcePrepare), res.Command)
	assert.Equal(t, map[string]int{api.OutcomeApplied: 3}, res.Counts)
	assert.Len(t, records, 3)
	res, err = c.Batch(t.Context(), api.CommandForcePrepare, req, client.BatchProgress{})
	require.NoError(t, err)
	assert.True(t, res.Replayed, "the same request id returns the stored result")

	_, err = c.Batch(t.Context(), api.CommandApplyRetrySpec, req, client.BatchProgress{})
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, http.StatusNotFound, ce.Status, "batches run prepare and force-prepare only")
}

// One Client serves many goroutines at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	s := newStack(t)
	id := s.create(t, 1, mailer, nil)
	c := s.client(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			if _, err := c.Get(t.Context(), id); err != nil {
				errs <- err
			}
			if _, err := c.List(t.Context(), api.Query{Filter: api.Filter{Processor: "Mailer"}, Limit: i + 1}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, err := c.Count(t.Context(), api.Filter{ID: id})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}
