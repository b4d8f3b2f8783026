package rules_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/rules"
)

// hostileRules are rules written into the bucket by something other than
// the store (a buggy producer, a bad migration, a hand edit), each with
// the field its decoder names.
func hostileRules() []struct{ name, key, value, field string } {
	match := fmt.Sprintf(`{"functionContext":%q,"processor":%q,"function":%q,"errorCode":"Timeout"}`, fn.ContextName, fn.ProcessorName, fn.Name)
	created := t0.UnixMilli() - 1000
	rule := func(id, rest string) string {
		return fmt.Sprintf(`{"id":%q,"match":%s,"reason":"x","actor":"a","createdAt":%d,%s}`, id, match, created, rest)
	}
	return []struct{ name, key, value, field string }{
		// Finding 2: a nil dereference in ApplyToCreate on the next failure.
		{"retry spec missing", "r-000000000001", rule("r-000000000001", `"action":"APPLY_RETRY_SPEC"`), "retrySpec"},
		// Finding 2: every matching failure refused forever.
		{"negative max retries", "r-000000000002", rule("r-000000000002", `"action":"APPLY_RETRY_SPEC","retrySpec":{"maxRetries":-5,"minBackoff":1,"executionTimeout":1}`), "retrySpec"},
		// Finding 5: a key nats.go cannot address.
		{"key nats.go refuses", "r-ü", rule("r-ü", `"action":"WAIVE"`), "key"},
		{"id is not the key", "r-000000000003", rule("r-000000000004", `"action":"WAIVE"`), "id"},
		{"unknown action", "r-000000000005", rule("r-000000000005", `"action":"DROP"`), "action"},
		{"created in the future", "r-000000000006", strings.Replace(rule("r-000000000006", `"action":"WAIVE"`), fmt.Sprint(created), "9000000000000000", 1), "createdAt"},
		{"not JSON", "r-000000000007", `{"id":"r-000000000007",`, ""},
		{"negative count", "r-000000000008", rule("r-000000000008", `"action":"WAIVE","recorded":-1`), "recorded"},
		// Finding 8 of "derived state never outranks the event store": a
		// WAIVE rule written by hand, without the audit entry of its
		// creation, made failures UNRECOVERABLE with nobody named.
		{"no audit entry", "r-000000000009", rule("r-000000000009", `"action":"WAIVE"`), "audit"},
		// Operator text is read back by the rule it is taken by (text.Line).
		{"a bidi control in the reason", "r-00000000000a", strings.Replace(rule("r-00000000000a", fmt.Sprintf(`"action":"WAIVE","audit":[{"op":"add","actor":"a","reason":"x","at":%d}]`, created)), `"reason":"x","actor"`, `"reason":"x\u202ey","actor"`, 1), "reason"},
		{"a C1 control in the audit", "r-00000000000b", rule("r-00000000000b", fmt.Sprintf(`"action":"WAIVE","audit":[{"op":"add","actor":"a","reason":"x\u009by","at":%d}]`, created)), "audit[0].reason"},
	}
}

func TestStoredRulesThatDoNotValidateMatchNothing(t *testing.T) {
	srv := natstest.New(t)
	_, js := srv.Connect()
	ctx := t.Context()
	clock := fakeclock.At(t0.UnixMilli())
	q, err := quarantine.New(js, quarantine.WithMemoryStorage(), quarantine.WithClock(clock))
	require.NoError(t, err)
	st, err := rules.OpenStore(ctx, js, rules.WithClock(clock), rules.WithQuarantine(q))
	require.NoError(t, err)
	good, err := st.Add(ctx, api.Rule{Match: api.RuleMatch{FunctionContext: fn.ContextName, Processor: fn.ProcessorName, Function: fn.Name, ErrorCode: "Other"},
		Action: rules.MarkUnrecoverable, Reason: "known bad"})
	require.NoError(t, err)

	for _, h := range hostileRules() {
		_, err := js.Publish(ctx, "$KV."+rules.DefaultBucket+"."+h.key, []byte(h.value))
		require.NoError(t, err, h.name)
	}
	w := st.Watcher(time.Hour, nil)
	wctx, stop := cancellable(t)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	<-w.Ready()

	x := rules.Failure{Function: fn, ErrorCode: "Timeout"}
	r, ok := w.Match(x, t0)
	assert.False(t, ok, "no invalid rule matches, got %+v", r)
	assert.Equal(t, 1, w.Set().Len(), "only the valid rule is loaded")
	_, ok = w.Match(rules.Failure{Function: fn, ErrorCode: "Other"}, t0)
	assert.True(t, ok, "the valid rule still matches")

	list, err := st.List(ctx, true)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, good.ID, list[0].ID)

	entries, err := q.All(ctx, quarantine.Query{Consumer: rules.DefaultBucket})
	require.NoError(t, err)
	byKey := map[string]quarantine.Entry{}
	for _, e := range entries {
		byKey[e.Key] = e
	}
	for _, h := range hostileRules() {
		e, ok := byKey[h.key]
		if !assert.True(t, ok, "%s: quarantined", h.name) {
			continue
		}
		assert.Equal(t, quarantine.ReasonInvalidEntry, e.Reason)
		assert.Equal(t, "KV_"+rules.DefaultBucket, e.Stream)
		assert.NotZero(t, e.Seq, "the revision")
		if h.field != "" {
			assert.Contains(t, e.Error, ": "+h.field+": ", "%s: the error names the field", h.name)
		}
	}

	// Finding 2: apply --dry-run of such a rule answers an error, not a panic.
	_, err = st.Apply(ctx, "r-000000000001", nil, nil, rules.ApplyOptions{DryRun: true})
	require.ErrorIs(t, err, rules.ErrInvalidRule)
	assert.Contains(t, err.Error(), "retrySpec")
	_, err = st.Remove(ctx, "r-000000000001", "alice", "cleanup")
	require.ErrorIs(t, err, rules.ErrInvalidRule, "an invalid rule is not rewritten as if it were one")

	stop()
	<-done
}

// A rule value in memory without its spec (the store never hands one out)
// changes nothing instead of panicking.
func TestApplyToCreateOfARuleWithoutItsSpecChangesNothing(t *testing.T) {
	r := api.Rule{Action: rules.ApplyRetrySpec}
	c := aggregate.CreateExecutionFailed{}
	assert.NotPanics(t, func() { rules.ApplyToCreate(&r, &c, aggregate.RetrySpec{MaxRetries: 3}) })
	assert.Nil(t, c.RetrySpec)
	_, ok := rules.CommandOf(&r)
	assert.False(t, ok)
}

func TestDecodeStoredAcceptsWhatTheStoreWrites(t *testing.T) {
	r := byFunction("Timeout", rules.ApplyRetrySpec)
	r.ID, r.Actor, r.CreatedAt = "r-0123456789ab", "alice", t0.UnixMilli()
	r.RetrySpec = &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 1}
	r.ExpiresAt = t0.UnixMilli() + 10
	r.Audit = []api.RuleAudit{{Op: "add", Actor: "alice", Reason: "r", At: t0.UnixMilli()}}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	got, err := rules.DecodeStored(r.ID, b, t0.Add(time.Hour))
	require.NoError(t, err, "an expired rule is still a valid one")
	assert.Equal(t, r, got)
}
