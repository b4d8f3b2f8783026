package rules_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rules"
)

func TestApplyDryRunThenRealThenAgain(t *testing.T) {
	ctx := t.Context()
	js := natstest.New(t).JetStream()
	clock := fakeclock.At(t0.UnixMilli())
	store, err := jsstore.New(js)
	require.NoError(t, err)
	svc := aggregate.NewService(store, aggregate.WithClock(clock))
	views, err := projection.OpenViews(ctx, js)
	require.NoError(t, err)
	proj, err := projection.NewProjector(js, store, views)
	require.NoError(t, err)
	ix, err := projection.NewIndex(views, store, projection.WithClock(clock))
	require.NoError(t, err)
	runCtx, stop := cancellable(t)
	done := make(chan struct{}, 2)
	go func() { _ = proj.Run(runCtx); done <- struct{}{} }()
	go func() { _ = ix.Run(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { stop(); <-done; <-done })
	st, err := rules.OpenStore(ctx, js, rules.WithClock(clock))
	require.NoError(t, err)

	for _, ev := range []string{"e1", "e2"} {
		id := aggregate.RecordID(ev, fn)
		res, err := svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: ev, AggregateID: aggregate.WireAggregateID{ContextName: "shop", AggregateName: "order", AggregateID: ev}, Version: 1},
			Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "Declined", Fingerprint: fpA}, ExecuteAt: t0.UnixMilli(),
		}, aggregate.Meta{})
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		require.NoError(t, ix.WaitFor(wctx, id, res.Version))
		cancel()
	}
	rule, err := st.Add(ctx, api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.MarkUnrecoverable, Reason: "declines never heal", Actor: "alice"})
	require.NoError(t, err)

	_, err = st.Apply(ctx, rule.ID, ix, svc, rules.ApplyOptions{})
	require.ErrorIs(t, err, rules.ErrInvalidRule, "a real apply needs a request id")

	dry, err := st.Apply(ctx, rule.ID, ix, svc, rules.ApplyOptions{DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 2, dry.Matched)
	assert.Equal(t, map[string]int{api.OutcomeWould: 2}, dry.Counts)
	got, _ := st.Get(ctx, rule.ID)
	assert.Len(t, got.Audit, 1, "a dry run is not audited")

	real, err := st.Apply(ctx, rule.ID, ix, svc, rules.ApplyOptions{RequestID: "req-1", Actor: "bob", RatePerSecond: api.MaxBatchRate})
	require.NoError(t, err)
	assert.True(t, real.Complete)
	assert.Equal(t, map[string]int{api.OutcomeApplied: 2}, real.Counts)
	state, _, err := svc.Get(ctx, aggregate.RecordID("e1", fn))
	require.NoError(t, err)
	assert.Equal(t, aggregate.Unrecoverable, state.Recoverable)
	got, _ = st.Get(ctx, rule.ID)
	assert.EqualValues(t, 2, got.Applied)
	assert.Equal(t, []string{"add", "apply"}, ops(got.Audit))
	assert.Equal(t, "bob", got.Audit[1].Actor)

	again, err := st.Apply(ctx, rule.ID, ix, svc, rules.ApplyOptions{RequestID: "req-1", RatePerSecond: api.MaxBatchRate})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{api.OutcomeDuplicate: 2}, again.Counts, "the same request applies nothing twice")

	clock.SetMillis(t0.Add(time.Hour).UnixMilli())
	_, err = st.Remove(ctx, rule.ID, "bob", "done")
	require.NoError(t, err)
	_, err = st.Apply(ctx, rule.ID, ix, svc, rules.ApplyOptions{DryRun: true})
	require.ErrorIs(t, err, rules.ErrInvalidRule, "a removed rule is not applied")
}
