package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/amends-dev/amends/api"
)

// Rules lists the operators' rules, removed ones included, oldest first,
// each with how many records it touched and matches now. A server that
// keeps no rules answers a *Error with Status 404.
func (c *Client) Rules(ctx context.Context) ([]api.Rule, error) {
	var l api.RuleList
	return l.Rules, c.get(ctx, "/api/v1/rules", &l)
}

// Rule returns one rule; an unknown id is a *Error with Status 404.
func (c *Client) Rule(ctx context.Context, id string) (api.Rule, error) {
	var r api.Rule
	return r, c.get(ctx, "/api/v1/rules/"+url.PathEscape(id), &r)
}

// AddRule adds a rule that acts on failures recorded from now on; apply
// it to existing records with ApplyRule. A rule the server refuses is a
// *Error: Status 400 for an unknown action, 422 naming the problem (a
// match that is neither a fingerprint nor a function and error code, a
// missing reason, a retry spec the action does not take), 409 when the
// server keeps the most rules it can. Needs an operator token.
func (c *Client) AddRule(ctx context.Context, req api.RuleRequest) (api.Rule, error) {
	var r api.Rule
	return r, c.call(ctx, http.MethodPost, "/api/v1/rules", req, nil, &r)
}

// RemoveRule removes rule id, with a reason (required: 422 without one);
// the rule is kept, marked, with its audit. Needs an operator token.
func (c *Client) RemoveRule(ctx context.Context, id, reason string) (api.Rule, error) {
	var r api.Rule
	return r, c.call(ctx, http.MethodPost, "/api/v1/rules/"+url.PathEscape(id)+"/remove", api.RuleRemoveRequest{Reason: reason}, nil, &r)
}

// ApplyRule runs rule id on the existing unfinished records it matches, as
// a batch: req.DryRun reports what would happen; a real run needs
// req.RequestID (422 without one), and the same id again applies nothing
// twice (outcome "duplicate"). Needs an operator token.
func (c *Client) ApplyRule(ctx context.Context, id string, req api.RuleApplyRequest) (api.BatchResult, error) {
	var r api.BatchResult
	return r, c.call(ctx, http.MethodPost, "/api/v1/rules/"+url.PathEscape(id)+"/apply", req, nil, &r)
}

// Schedule returns the automatic retries record id has left and when each
// is due at the earliest, or (ParkedBy) the rule that parks it until a
// deploy. An unknown id is a *Error with Status 404.
func (c *Client) Schedule(ctx context.Context, id string) (api.RecordSchedule, error) {
	var s api.RecordSchedule
	return s, c.get(ctx, "/api/v1/records/"+url.PathEscape(id)+"/schedule", &s)
}

// SummaryByFingerprint is Summary with the records also grouped by
// failure fingerprint (api.Summary.Fingerprints).
func (c *Client) SummaryByFingerprint(ctx context.Context, f api.Filter) (api.Summary, error) {
	if err := noNow(f); err != nil {
		return api.Summary{}, err
	}
	v := f.Values()
	v.Set("by", "fingerprint")
	var s api.Summary
	return s, c.get(ctx, "/api/v1/summary"+query(v), &s)
}
