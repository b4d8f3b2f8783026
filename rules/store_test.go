package rules_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/rules"
)

func TestStoreAuditRemoveAndWatch(t *testing.T) {
	ctx := t.Context()
	clock := fakeclock.At(t0.UnixMilli())
	st, err := rules.OpenStore(ctx, natstest.New(t).JetStream(), rules.WithClock(clock))
	require.NoError(t, err)

	_, err = st.Add(ctx, api.Rule{Action: rules.Waive, Reason: "x"})
	require.ErrorIs(t, err, rules.ErrInvalidRule)

	w := st.Watcher(time.Hour, nil)
	wctx, stop := cancellable(t)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	<-w.Ready()

	r := byFunction("Timeout", rules.ParkUntilDeploy)
	r.Actor, r.Reason = "alice", "payments provider down"
	added, err := st.Add(ctx, r)
	require.NoError(t, err)
	assert.True(t, rules.ValidID(added.ID), added.ID)
	assert.Equal(t, t0.UnixMilli(), added.CreatedAt)
	require.Len(t, added.Audit, 1)
	assert.Equal(t, api.RuleAudit{Op: "add", Actor: "alice", Reason: "payments provider down", At: t0.UnixMilli()}, added.Audit[0])

	x := rules.Failure{Function: fn, ErrorCode: "Timeout"}
	require.Eventually(t, func() bool { _, ok := w.Match(x, t0); return ok }, 30*time.Second, 10*time.Millisecond, "the watcher sees the new rule")
	w.Match(x, t0)
	w.Flush(ctx)
	got, err := st.Get(ctx, added.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 2, got.Recorded, "the matches are counted on the rule")

	clock.SetMillis(t0.UnixMilli() + 5)
	got, err = st.RecordApply(ctx, added.ID, "bob", "backfill", 7)
	require.NoError(t, err)
	assert.EqualValues(t, 7, got.Applied)
	assert.EqualValues(t, 9, got.Touched)

	_, err = st.Remove(ctx, added.ID, "carol", "")
	require.ErrorIs(t, err, rules.ErrInvalidRule, "a removal needs a reason")
	removed, err := st.Remove(ctx, added.ID, "carol", "provider is back")
	require.NoError(t, err)
	assert.Equal(t, t0.UnixMilli()+5, removed.RemovedAt)
	assert.Equal(t, []string{"add", "apply", "remove"}, ops(removed.Audit))
	require.Eventually(t, func() bool { _, ok := w.Set().Match(x, t0); return !ok }, 30*time.Second, 10*time.Millisecond, "a removed rule no longer matches")
	_, err = st.Remove(ctx, added.ID, "carol", "again")
	require.ErrorIs(t, err, rules.ErrNotFound)

	live, err := st.List(ctx, false)
	require.NoError(t, err)
	assert.Empty(t, live)
	all, err := st.List(ctx, true)
	require.NoError(t, err)
	require.Len(t, all, 1, "a removed rule keeps its audit")

	_, err = st.Get(ctx, "../etc")
	require.ErrorIs(t, err, rules.ErrNotFound)
	stop()
	<-done
}

func ops(a []api.RuleAudit) []string {
	var out []string
	for _, e := range a {
		out = append(out, e.Op)
	}
	return out
}

// A watcher started while rules are being written (a flush of the match
// counts) begins with every rule: a KV watch's own end-of-initial-values
// signal comes early then, and the first set missed the rules written.
func TestWatcherStartsWithEveryRuleWhileRulesAreWritten(t *testing.T) {
	ctx := t.Context()
	st, err := rules.OpenStore(ctx, natstest.New(t).JetStream())
	require.NoError(t, err)
	var ids []string
	for _, code := range []string{"A", "B", "C", "D", "E"} {
		r := byFunction(code, rules.ParkUntilDeploy)
		r.Actor, r.Reason = "alice", "provider down"
		added, err := st.Add(ctx, r)
		require.NoError(t, err)
		ids = append(ids, added.ID)
	}
	wctx, stop := cancellable(t)
	var writers sync.WaitGroup
	for _, id := range ids {
		writers.Go(func() {
			for wctx.Err() == nil {
				_, _ = st.RecordApply(wctx, id, "bob", "backfill", 1)
			}
		})
	}
	for range 20 {
		w := st.Watcher(time.Hour, nil)
		rctx, cancel := cancellable(t)
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(rctx) }()
		<-w.Ready()
		n := w.Set().Len()
		cancel()
		<-done
		require.Equal(t, len(ids), n, "rules in the watcher's first set")
	}
	stop()
	writers.Wait()
}
