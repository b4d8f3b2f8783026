package rules_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/rules"
)

var (
	t0  = time.UnixMilli(1_735_000_000_000)
	fn  = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "billing", Name: "charge"}
	fpA = "fp1-00000000000000aa"
	fpB = "fp1-00000000000000bb"
)

func byFunction(code string, a rules.Action) api.Rule {
	return api.Rule{Match: api.RuleMatch{FunctionContext: fn.ContextName, Processor: fn.ProcessorName, Function: fn.Name, ErrorCode: code}, Action: a, Reason: "r"}
}

func TestSetMatchPrecedence(t *testing.T) {
	fp := api.Rule{ID: "r-fp", Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.MarkUnrecoverable, CreatedAt: 1}
	old := byFunction("Timeout", rules.MarkRecoverable)
	old.ID, old.CreatedAt = "r-old", 1
	newer := byFunction("Timeout", rules.ParkUntilDeploy)
	newer.ID, newer.CreatedAt = "r-new", 2
	expired := byFunction("Timeout", rules.Waive)
	expired.ID, expired.CreatedAt, expired.ExpiresAt = "r-exp", 3, t0.UnixMilli()
	removed := byFunction("Timeout", rules.Waive)
	removed.ID, removed.CreatedAt, removed.RemovedAt = "r-rem", 4, 1
	s := rules.NewSet([]api.Rule{fp, old, newer, expired, removed})
	assert.Equal(t, 4, s.Len(), "removed rules are left out")

	x := rules.Failure{Function: fn, ErrorCode: "Timeout", Fingerprint: fpA}
	r, ok := s.Match(x, t0)
	require.True(t, ok)
	assert.Equal(t, "r-fp", r.ID, "a fingerprint rule wins over a function rule")
	x.Fingerprint = fpB
	r, ok = s.Match(x, t0)
	require.True(t, ok)
	assert.Equal(t, "r-new", r.ID, "the newest live function rule; the expired one no longer matches")
	assert.True(t, s.Parked(x, t0))
	r, _ = s.Match(x, t0.Add(-time.Millisecond))
	assert.Equal(t, "r-exp", r.ID, "before its expiry the newest rule matches")
	x.ErrorCode = "Other"
	_, ok = s.Match(x, t0)
	assert.False(t, ok)
	var nilSet *rules.Set
	_, ok = nilSet.Match(x, t0)
	assert.False(t, ok, "a nil set matches nothing")
	assert.Len(t, s.Parks("shop", "billing", t0), 1)
	assert.Empty(t, s.Parks("shop", "other", t0))
}

// The indexed Set gives the same answer as a scan of every rule in
// precedence order.
func TestPropertySetMatchesLinearScan(t *testing.T) {
	fps := []string{fpA, fpB, "fp1-00000000000000cc"}
	names := []string{"a", "b"}
	codes := []string{"X", "Y"}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 30).Draw(t, "n")
		var list []api.Rule
		for i := range n {
			r := api.Rule{ID: fmt.Sprintf("r-%03d", i), Action: rapid.SampledFrom(rules.Actions).Draw(t, "action"),
				CreatedAt: rapid.Int64Range(0, 5).Draw(t, "createdAt")}
			if rapid.Bool().Draw(t, "byFingerprint") {
				r.Match.Fingerprint = rapid.SampledFrom(fps).Draw(t, "fp")
			} else {
				r.Match = api.RuleMatch{FunctionContext: "c", Processor: rapid.SampledFrom(names).Draw(t, "proc"),
					Function: rapid.SampledFrom(names).Draw(t, "fn"), ErrorCode: rapid.SampledFrom(codes).Draw(t, "code")}
			}
			if rapid.IntRange(0, 4).Draw(t, "expires") == 0 {
				r.ExpiresAt = rapid.Int64Range(1, 10).Draw(t, "expiresAt")
			}
			if rapid.IntRange(0, 6).Draw(t, "removed") == 0 {
				r.RemovedAt = 1
			}
			list = append(list, r)
		}
		x := rules.Failure{
			Function:    aggregate.FunctionInfo{ContextName: "c", ProcessorName: rapid.SampledFrom(names).Draw(t, "xproc"), Name: rapid.SampledFrom(names).Draw(t, "xfn")},
			ErrorCode:   rapid.SampledFrom(codes).Draw(t, "xcode"),
			Fingerprint: rapid.SampledFrom(append(fps, "")).Draw(t, "xfp"),
		}
		now := time.UnixMilli(rapid.Int64Range(0, 11).Draw(t, "now"))
		got, gotOK := rules.NewSet(list).Match(x, now)
		want := scan(list, x, now)
		switch {
		case gotOK != (want != nil):
			t.Fatalf("matched %v, want %v", gotOK, want)
		case gotOK && got.ID != want.ID:
			t.Fatalf("rule %s, want %s", got.ID, want.ID)
		}
	})
}

// scan is the reference matcher: fingerprint rules first, then function
// rules, each newest first (ties by id), the first live one that matches.
func scan(list []api.Rule, x rules.Failure, now time.Time) *api.Rule {
	var best *api.Rule
	better := func(r, than *api.Rule) bool {
		rf, tf := r.Match.Fingerprint != "", than.Match.Fingerprint != ""
		if rf != tf {
			return rf
		}
		if r.CreatedAt != than.CreatedAt {
			return r.CreatedAt > than.CreatedAt
		}
		return strings.Compare(r.ID, than.ID) < 0
	}
	for i := range list {
		r := &list[i]
		if !rules.Live(r, now) || !rules.Matches(r.Match, x) {
			continue
		}
		if best == nil || better(r, best) {
			best = r
		}
	}
	return best
}

func TestValidate(t *testing.T) {
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 10}
	bad := aggregate.RetrySpec{MaxRetries: -1}
	cases := []struct {
		name string
		r    api.Rule
		msg  string
	}{
		{"fingerprint rule", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.Waive, Reason: "noise"}, ""},
		{"function rule", byFunction("Timeout", rules.ParkUntilDeploy), ""},
		{"retry spec rule", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.ApplyRetrySpec, RetrySpec: &spec, Reason: "r"}, ""},
		{"no match", api.Rule{Action: rules.Waive, Reason: "r"}, "match needs a fingerprint, or all of functionContext, processor, function and errorCode"},
		{"both", api.Rule{Match: api.RuleMatch{Fingerprint: fpA, ErrorCode: "X"}, Action: rules.Waive, Reason: "r"}, "match takes a fingerprint or a function and error code, not both"},
		{"bad fingerprint", api.Rule{Match: api.RuleMatch{Fingerprint: "abc"}, Action: rules.Waive, Reason: "r"}, `match.fingerprint must be fp1- followed by 16 hexadecimal digits, got "abc"`},
		{"partial function", api.Rule{Match: api.RuleMatch{Processor: "p", ErrorCode: "X"}, Action: rules.Waive, Reason: "r"}, "match needs a fingerprint, or all of functionContext, processor, function and errorCode"},
		{"unknown action", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: "NUKE", Reason: "r"}, `action must be one of MARK_UNRECOVERABLE, MARK_RECOVERABLE, APPLY_RETRY_SPEC, HOLD_UNTIL_DEPLOY, WAIVE, got "NUKE"`},
		{"spec missing", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.ApplyRetrySpec, Reason: "r"}, "retrySpec is required by the action APPLY_RETRY_SPEC"},
		{"spec invalid", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.ApplyRetrySpec, RetrySpec: &bad, Reason: "r"}, "retrySpec: maxRetries must be greater than or equal to 0"},
		{"spec on another action", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.Waive, RetrySpec: &spec, Reason: "r"}, "retrySpec is only taken by the action APPLY_RETRY_SPEC, not WAIVE"},
		{"no reason", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.Waive, Reason: " "}, "reason must not be blank"},
		{"long reason", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.Waive, Reason: strings.Repeat("x", rules.MaxReasonBytes+1)}, "reason must be at most 1024 bytes, got 1025"},
		{"control characters", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.Waive, Reason: "a\x00b"}, "reason must be UTF-8 text without control characters: it has U+0000 at byte 1"},
		{"expired", api.Rule{Match: api.RuleMatch{Fingerprint: fpA}, Action: rules.Waive, Reason: "r", ExpiresAt: t0.UnixMilli()}, "expiresAt must be after now (1735000000000), got 1735000000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := rules.Validate(&c.r, t0)
			if c.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, rules.ErrInvalidRule)
			assert.Equal(t, c.msg+": "+rules.ErrInvalidRule.Error(), err.Error())
		})
	}
}

func TestApplyToCreateAndCommand(t *testing.T) {
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 10, MaxBackoff: 60}
	for _, c := range []struct {
		a       rules.Action
		rec     aggregate.Recoverability
		max     int32
		command aggregate.Command
	}{
		{rules.MarkUnrecoverable, aggregate.Unrecoverable, -1, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}},
		{rules.MarkRecoverable, aggregate.Recoverable, -1, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable}},
		{rules.ApplyRetrySpec, "", 3, aggregate.ApplyRetrySpec(spec)},
		{rules.Waive, aggregate.Unrecoverable, 0, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}},
		{rules.ParkUntilDeploy, "", -1, nil},
	} {
		r := api.Rule{Action: c.a}
		if c.a == rules.ApplyRetrySpec {
			r.RetrySpec = &spec
		}
		var create aggregate.CreateExecutionFailed
		rules.ApplyToCreate(&r, &create, aggregate.DefaultRetrySpec)
		assert.Equal(t, c.rec, create.Recoverable, c.a)
		if c.max < 0 {
			assert.Nil(t, create.RetrySpec, c.a)
		} else {
			require.NotNil(t, create.RetrySpec, c.a)
			assert.Equal(t, c.max, create.RetrySpec.MaxRetries, c.a)
		}
		cmd, ok := rules.CommandOf(&r)
		assert.Equal(t, c.command != nil, ok, c.a)
		assert.Equal(t, c.command, cmd, c.a)
	}
}

// PARK_UNTIL_DEPLOY, the park-until-deploy action in words, is read as the
// action the wire has always named HOLD_UNTIL_DEPLOY; that name still is.
func TestParseActionTakesParkUntilDeploy(t *testing.T) {
	for _, s := range []string{"PARK_UNTIL_DEPLOY", "park_until_deploy", "HOLD_UNTIL_DEPLOY", "hold_until_deploy"} {
		a, err := rules.ParseAction(s)
		require.NoError(t, err, s)
		assert.Equal(t, rules.ParkUntilDeploy, a, s)
		assert.Equal(t, "HOLD_UNTIL_DEPLOY", a, "the stored and shown value of %s", s)
	}
	_, err := rules.ParseAction("PARK")
	require.ErrorIs(t, err, rules.ErrInvalidRule)
}
