package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/text"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/server"
)

// The characters an operator's text may not hold, and some it may.
var (
	refusedInText = []string{"\n", "\r", "\x00", "\x1b", "\x7f", "\u0085", "\u009b", "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\u00ad", "\u2028", "\u2029"}
	takenInText   = []string{"a", "Z", " ", "\t", "-", "ë", "日本", "👍🏽", "\u00a0", "\ufffd", "\"", "\\", "<b>"}
)

// operatorText draws a reason: mostly text an operator would write, at
// times with a character the rule refuses, at times near the limit.
func operatorText(t *rapid.T) string {
	var b strings.Builder
	for range rapid.IntRange(1, 12).Draw(t, "parts") {
		if rapid.IntRange(0, 9).Draw(t, "refuse") == 0 {
			b.WriteString(rapid.SampledFrom(refusedInText).Draw(t, "refused"))
		} else {
			b.WriteString(rapid.SampledFrom(takenInText).Draw(t, "taken"))
		}
	}
	if rapid.IntRange(0, 19).Draw(t, "long") == 0 {
		b.WriteString(strings.Repeat("x", text.MaxReasonBytes-b.Len()+rapid.IntRange(-2, 2).Draw(t, "over")))
	}
	return b.String()
}

// Operator text is taken by one rule at every route that takes it (a
// command's reason, a circuit's, a rule's, its removal's), and what is
// taken is read back whole: a rule with a bidi control, a C1 control or
// U+2028 in its reason used to be taken and then to vanish from the list
// as stored invalid.
func TestOperatorTextIsTakenAndReadBackByOneRule(t *testing.T) {
	base, _ := circuitsEnv(t)
	rs, err := rules.OpenStore(t.Context(), base.js, rules.WithClock(base.clock))
	require.NoError(t, err)
	e := base.with(t, func(c *server.Config) { c.Rules = rs })
	const circuitPath = "/api/v1/circuits/order.Mailer.send"
	n, open := 0, false
	var taken, refused int

	rapid.Check(t, func(rt *rapid.T) {
		n++
		reason := operatorText(rt)
		want := strings.TrimSpace(reason)
		bad := text.Line(want, text.MaxReasonBytes) != nil || want == ""
		refusedAs := func(what string, r response) {
			require.Equal(rt, http.StatusBadRequest, r.status, "%s with reason %q: %s", what, reason, r.body)
			ae := r.apiError(t)
			assert.Equal(rt, "reason", ae.Details["field"], "%s: %s", what, r.body)
		}

		// A rule, and its removal.
		match := api.RuleMatch{FunctionContext: "order", Processor: "Mailer", Function: "send", ErrorCode: fmt.Sprintf("E%d", n)}
		r := e.do(t, "POST", "/api/v1/rules", operatorKey, api.RuleRequest{Match: match, Action: "WAIVE", Reason: reason})
		if bad {
			refused++
			require.Contains(rt, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, r.status, "rule with reason %q: %s", reason, r.body)
			assert.Contains(rt, r.apiError(t).Message, "reason", "%s", r.body)
		} else {
			taken++
			require.Equal(rt, http.StatusCreated, r.status, "rule with reason %q: %s", reason, r.body)
			var added api.Rule
			r.json(t, &added)
			got := e.do(t, "GET", "/api/v1/rules/"+added.ID, viewerKey, nil)
			require.Equal(rt, http.StatusOK, got.status, "a rule taken is read back: %s", got.body)
			var back api.Rule
			got.json(t, &back)
			assert.Equal(rt, want, back.Reason)
			rm := e.do(t, "POST", "/api/v1/rules/"+added.ID+"/remove", operatorKey, api.RuleRemoveRequest{Reason: reason})
			require.Equal(rt, http.StatusOK, rm.status, "removal with reason %q: %s", reason, rm.body)
			got = e.do(t, "GET", "/api/v1/rules/"+added.ID, viewerKey, nil)
			require.Equal(rt, http.StatusOK, got.status, "a removed rule is read back: %s", got.body)
		}

		// A circuit, opened and closed in turn.
		verb := map[bool]string{false: "open", true: "close"}[open]
		r = e.do(t, "POST", circuitPath+"/"+verb, operatorKey, api.CircuitAction{Reason: reason})
		if bad {
			refusedAs("circuit "+verb, r)
		} else {
			require.Equal(rt, http.StatusOK, r.status, "circuit %s with reason %q: %s", verb, reason, r.body)
			open = !open
			got := e.do(t, "GET", circuitPath, viewerKey, nil)
			require.Equal(rt, http.StatusOK, got.status, "%s", got.body)
			var c api.Circuit
			got.json(t, &c)
			require.NotEmpty(rt, c.Transitions, "the circuit is read back with its transitions: %s", got.body)
			assert.Equal(rt, want, c.Transitions[len(c.Transitions)-1].Reason)
		}
	})
	assert.Positive(t, taken, "some reasons were taken")
	assert.Positive(t, refused, "some reasons were refused")
}
