package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/rules"
)

func TestTypedRulesAndSchedule(t *testing.T) {
	s := newStack(t)
	st, err := rules.OpenStore(t.Context(), natstest.New(t).JetStream())
	require.NoError(t, err)
	s.cfg.Rules = st
	s.serve(t)
	c := s.client(t)
	ctx := t.Context()
	id := s.create(t, 1, mailer, nil)

	_, err = c.AddRule(ctx, api.RuleRequest{Match: api.RuleMatch{Processor: "Mailer"}, Action: "WAIVE", Reason: "r"})
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, http.StatusUnprocessableEntity, ce.Status)

	r, err := c.AddRule(ctx, api.RuleRequest{Match: api.RuleMatch{FunctionContext: "order", Processor: "Mailer", Function: "onOrderPlaced", ErrorCode: "Timeout"},
		Action: "HOLD_UNTIL_DEPLOY", Reason: "fix in review"})
	require.NoError(t, err)
	got, err := c.Rule(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, "HOLD_UNTIL_DEPLOY", got.Action)
	res, err := c.ApplyRule(ctx, r.ID, api.RuleApplyRequest{DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, "hold", res.Command, "a hold needs no command")
	all, err := c.Rules(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	removed, err := c.RemoveRule(ctx, r.ID, "merged")
	require.NoError(t, err)
	assert.False(t, removed.Live)

	sched, err := c.Schedule(ctx, id)
	require.NoError(t, err)
	assert.Len(t, sched.Retries, int(aggregate.DefaultRetrySpec.MaxRetries))
	sum, err := c.SummaryByFingerprint(ctx, api.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Total)
}
