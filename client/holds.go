package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/amends-dev/amends/api"
)

// Holds returns the holds of Ordered functions q selects, in key order. A
// server without them answers a *Error with Status 404; a bad parameter
// is a *Error with Status 400 naming it in Details["field"].
func (c *Client) Holds(ctx context.Context, q api.HoldQuery) (api.HoldPage, error) {
	var p api.HoldPage
	return p, c.get(ctx, "/api/v1/holds"+query(q.Values()), &p)
}

// Hold returns one hold with its held events. An unknown key is a *Error
// with Status 404.
func (c *Client) Hold(ctx context.Context, key string) (api.Hold, error) {
	var h api.Hold
	return h, c.get(ctx, "/api/v1/holds/"+url.PathEscape(key), &h)
}

// ReleaseHold releases hold key without replaying its head (operator):
// the head record is marked resolved with the caller as actor and reason,
// and the held events go to the function in order; dryRun says what
// would be done. reason is required (a *Error with Status 400 otherwise);
// an unknown key is a *Error with Status 404.
func (c *Client) ReleaseHold(ctx context.Context, key, reason string, dryRun bool) (api.ReleasePlan, error) {
	var p api.ReleasePlan
	body := api.HoldActionRequest{Reason: reason, DryRun: dryRun}
	return p, c.call(ctx, http.MethodPost, "/api/v1/holds/"+url.PathEscape(key)+"/release", body, nil, &p)
}

// SkipHeld skips held event eventID of hold key (operator, audited on the
// hold) and returns the hold after it (as it would be, with dryRun). An
// event the hold does not keep is a *Error with Status 409 and Code
// "NotHeld".
func (c *Client) SkipHeld(ctx context.Context, key, eventID, reason string, dryRun bool) (api.Hold, error) {
	var h api.Hold
	body := api.HoldActionRequest{Reason: reason, EventID: eventID, DryRun: dryRun}
	return h, c.call(ctx, http.MethodPost, "/api/v1/holds/"+url.PathEscape(key)+"/skip", body, nil, &h)
}

// StartReplay starts the range replay s (operator), or with s.DryRun
// returns its plan. The request id makes it idempotent: the same id with
// the same selection returns the stored replay with Created false;
// another selection is a *Error with Status 409. An invalid range is a
// *Error with Status 400.
func (c *Client) StartReplay(ctx context.Context, s api.ReplayStart) (api.ReplayStarted, error) {
	var r api.ReplayStarted
	return r, c.call(ctx, http.MethodPost, "/api/v1/replays", s, nil, &r)
}

// Replay returns range replay id with its progress. An unknown id is a
// *Error with Status 404.
func (c *Client) Replay(ctx context.Context, id string) (api.Replay, error) {
	var r api.Replay
	return r, c.get(ctx, "/api/v1/replays/"+url.PathEscape(id), &r)
}
