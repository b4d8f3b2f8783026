package client

import (
	"context"
	"net/url"

	"github.com/amends-dev/amends/api"
)

// Get returns one record. An unknown id is a *Error with Status 404 and
// Code "NotFound".
func (c *Client) Get(ctx context.Context, id string) (api.View, error) {
	var v api.View
	return v, c.get(ctx, "/api/v1/records/"+url.PathEscape(id), &v)
}

// History returns a record's commands, newest first. An unknown id is a
// *Error with Status 404.
func (c *Client) History(ctx context.Context, id string) ([]api.HistoryEntry, error) {
	var h []api.HistoryEntry
	return h, c.get(ctx, "/api/v1/records/"+url.PathEscape(id)+"/history", &h)
}

// List returns one page of the records q selects, in q.Sort order; set
// q.Cursor to the page's Next for the next one. A value the server
// refuses (a limit over api.MaxLimit, a stale cursor, an unknown view) is
// a *Error with Status 400 whose Details["field"] names the query
// parameter. q.Filter.Now must be zero (ErrInvalidRequest): lists are
// evaluated at the server's clock.
func (c *Client) List(ctx context.Context, q api.Query) (api.Page, error) {
	if err := noNow(q.Filter); err != nil {
		return api.Page{}, err
	}
	var p api.Page
	return p, c.get(ctx, "/api/v1/records"+query(q.Values()), &p)
}

// Count counts the records f selects. Errors are those of List.
func (c *Client) Count(ctx context.Context, f api.Filter) (int, error) {
	if err := noNow(f); err != nil {
		return 0, err
	}
	var r api.CountResponse
	return r.Count, c.get(ctx, "/api/v1/count"+query(f.Values()), &r)
}

// Summary returns the failure summary of the records f selects. Errors are
// those of List.
func (c *Client) Summary(ctx context.Context, f api.Filter) (api.Summary, error) {
	if err := noNow(f); err != nil {
		return api.Summary{}, err
	}
	var s api.Summary
	return s, c.get(ctx, "/api/v1/summary"+query(f.Values()), &s)
}

// Quarantine returns a page of the messages consumers quarantined, oldest
// first. A server that keeps no quarantine answers a *Error with Status
// 404; a bad cursor or limit is a *Error with Status 400.
func (c *Client) Quarantine(ctx context.Context, q api.QuarantineQuery) (api.QuarantinePage, error) {
	var p api.QuarantinePage
	return p, c.get(ctx, "/api/v1/quarantine"+query(q.Values()), &p)
}

// Audit returns a page of the audit log, oldest first: refused
// credentials, clients over their budget of them, sign-ins and sign-outs,
// and reads of original events. It needs an operator token. A server that
// keeps no audit log answers a *Error with Status 404; a bad parameter is a
// *Error with Status 400 naming it.
func (c *Client) Audit(ctx context.Context, q api.AuditQuery) (api.AuditPage, error) {
	var p api.AuditPage
	return p, c.get(ctx, "/api/v1/audit"+query(q.Values()), &p)
}

// noNow refuses a filter with a Now, which only batches take.
func noNow(f api.Filter) error {
	if !f.Now.IsZero() {
		return invalidRequest("the filter's Now is only for batches: lists, counts and summaries evaluate views at the server's clock; leave it zero")
	}
	return nil
}
