package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/server"
)

func TestRulesAPI(t *testing.T) {
	base := newEnv(t)
	st, err := rules.OpenStore(t.Context(), base.js, rules.WithClock(base.clock))
	require.NoError(t, err)
	e := base.with(t, func(c *server.Config) { c.Rules = st })
	ids := []string{e.create(t, 1, nil), e.create(t, 2, nil)}

	match := api.RuleMatch{FunctionContext: fn.ContextName, Processor: fn.ProcessorName, Function: fn.Name, ErrorCode: "Timeout"}
	r := e.do(t, "POST", "/api/v1/rules", viewerKey, api.RuleRequest{Match: match, Action: "WAIVE", Reason: "x"})
	assert.Equal(t, http.StatusForbidden, r.status, "a viewer cannot add rules")
	r = e.do(t, "POST", "/api/v1/rules", operatorKey, api.RuleRequest{Match: match, Action: "NUKE", Reason: "x"})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Contains(t, r.apiError(t).Message, "action must be one of MARK_UNRECOVERABLE")
	r = e.do(t, "POST", "/api/v1/rules", operatorKey, api.RuleRequest{Match: api.RuleMatch{Processor: "p"}, Action: "WAIVE", Reason: "x"})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "match needs a fingerprint, or all of functionContext, processor, function and errorCode", r.apiError(t).Message)
	r = e.do(t, "POST", "/api/v1/rules", operatorKey, `{"match":{},"action":"WAIVE","reason":"x","extra":1}`)
	assert.Equal(t, http.StatusBadRequest, r.status, "unknown fields are refused")

	r = e.do(t, "POST", "/api/v1/rules", operatorKey, api.RuleRequest{Match: match, Action: "mark_unrecoverable", Reason: "smtp is gone"})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var rule api.Rule
	r.json(t, &rule)
	assert.Equal(t, "bob", rule.Actor, "the rule is audited with the operator's name")
	assert.Equal(t, "MARK_UNRECOVERABLE", rule.Action)
	assert.Equal(t, 2, rule.Matching)
	assert.True(t, rule.Live)

	r = e.do(t, "POST", "/api/v1/rules/"+rule.ID+"/apply", operatorKey, api.RuleApplyRequest{DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var res api.BatchResult
	r.json(t, &res)
	assert.Equal(t, map[string]int{api.OutcomeWould: 2}, res.Counts)
	r = e.do(t, "POST", "/api/v1/rules/"+rule.ID+"/apply", operatorKey, api.RuleApplyRequest{})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "a real apply needs a request id: %s", r.body)
	r = e.do(t, "POST", "/api/v1/rules/"+rule.ID+"/apply", operatorKey, api.RuleApplyRequest{DryRun: true, Limit: -1})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Equal(t, "limit", r.apiError(t).Details["field"])
	assert.Contains(t, r.apiError(t).Message, "limit must be from 1 to 10000 (0 or absent: 10000), got -1")
	r = e.do(t, "POST", "/api/v1/rules/"+rule.ID+"/apply", operatorKey, api.RuleApplyRequest{RequestID: "q1", RatePerSecond: 1000})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var real api.BatchResult
	r.json(t, &real)
	assert.Equal(t, map[string]int{api.OutcomeApplied: 2}, real.Counts)
	state, _, err := e.svc.Get(t.Context(), ids[0])
	require.NoError(t, err)
	assert.Equal(t, aggregate.Unrecoverable, state.Recoverable)

	r = e.do(t, "GET", "/api/v1/rules", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status)
	var list api.RuleList
	r.json(t, &list)
	require.Len(t, list.Rules, 1)
	assert.EqualValues(t, 2, list.Rules[0].Applied)
	assert.EqualValues(t, 2, list.Rules[0].Touched)

	r = e.do(t, "POST", "/api/v1/rules/"+rule.ID+"/remove", operatorKey, api.RuleRemoveRequest{})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "a removal needs a reason")
	r = e.do(t, "POST", "/api/v1/rules/"+rule.ID+"/remove", operatorKey, api.RuleRemoveRequest{Reason: "smtp is back"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &rule)
	assert.False(t, rule.Live)
	assert.Len(t, rule.Audit, 3)
	r = e.do(t, "GET", "/api/v1/rules/r-000000000000", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.do(t, "GET", "/api/v1/rules/bad", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, r.status)

	r = base.do(t, "GET", "/api/v1/rules", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, r.status, "a server without a rules store says so")
}

func TestScheduleAndSummaryByFingerprint(t *testing.T) {
	e := newEnv(t)
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 10, MaxBackoff: 15}
	id := e.create(t, 1, &spec)
	r := e.do(t, "GET", "/api/v1/records/"+id+"/schedule", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var s api.RecordSchedule
	r.json(t, &s)
	require.Len(t, s.Retries, 3)
	first := t0 + 1 + 10_000
	assert.Equal(t, []aggregate.ScheduledRetry{{Attempt: 1, At: first}, {Attempt: 2, At: first + 15_000}, {Attempt: 3, At: first + 30_000}}, s.Retries,
		"10 s, then capped at 15 s")
	st, err := rules.OpenStore(t.Context(), e.js, rules.WithClock(e.clock))
	require.NoError(t, err)
	_, err = st.Add(t.Context(), api.Rule{Match: api.RuleMatch{FunctionContext: fn.ContextName, Processor: fn.ProcessorName, Function: fn.Name, ErrorCode: "Timeout"},
		Action: rules.ParkUntilDeploy, Reason: "fix in review"})
	require.NoError(t, err)
	held := e.with(t, func(c *server.Config) { c.Rules = st })
	r = held.do(t, "GET", "/api/v1/records/"+id+"/schedule", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var hs api.RecordSchedule
	r.json(t, &hs)
	assert.NotEmpty(t, hs.ParkedBy, "the hold is named")
	assert.Empty(t, hs.Retries, "a held record has no automatic retries until a deploy")
	r = e.do(t, "GET", "/api/v1/records/nope/schedule", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, r.status)

	r = e.do(t, "GET", "/api/v1/summary?by=fingerprint", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = e.do(t, "GET", "/api/v1/summary?by=code", viewerKey, nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
	r = e.do(t, "GET", "/api/v1/records?fingerprint=fp1-0000000000000000", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status)
	var page api.Page
	r.json(t, &page)
	assert.Empty(t, page.Items, "the fingerprint filters")
}

func TestRuleRetrySpecFollowsTheAPIsRules(t *testing.T) {
	base := newEnv(t)
	st, err := rules.OpenStore(t.Context(), base.js)
	require.NoError(t, err)
	e := base.with(t, func(c *server.Config) { c.Rules = st })
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 0}
	r := e.do(t, "POST", "/api/v1/rules", operatorKey, api.RuleRequest{Match: api.RuleMatch{Fingerprint: "fp1-0123456789abcdef"}, Action: "APPLY_RETRY_SPEC", RetrySpec: &spec, Reason: "slow"})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	body := r.apiError(t)
	assert.Equal(t, "retrySpec.executionTimeout", body.Details["field"])
	spec.ExecutionTimeout, spec.MaxBackoff, spec.Jitter = 30, 600, 0.2
	r = e.do(t, "POST", "/api/v1/rules", operatorKey, api.RuleRequest{Match: api.RuleMatch{Fingerprint: "fp1-0123456789abcdef"}, Action: "APPLY_RETRY_SPEC", RetrySpec: &spec, Reason: "slow"})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var rule api.Rule
	r.json(t, &rule)
	assert.Equal(t, &spec, rule.RetrySpec)
}

func TestApplyRetrySpecTakesMaxBackoffAndJitter(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	r := e.do(t, "POST", "/api/v1/records/"+id+"/apply_retry_spec", operatorKey, map[string]any{"maxRetries": 5, "minBackoff": 60, "executionTimeout": 30, "jitter": 2})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "jitter", r.apiError(t).Details["field"])
	r = e.do(t, "POST", "/api/v1/records/"+id+"/apply_retry_spec", operatorKey, map[string]any{"maxRetries": 5, "minBackoff": 60, "executionTimeout": 30, "maxBackoff": 300, "jitter": 0.5})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	st, _, err := e.svc.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30, MaxBackoff: 300, Jitter: 0.5}, st.RetrySpec)
}
