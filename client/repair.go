package client

import (
	"context"
	"net/http"

	"github.com/amends-dev/amends/api"
)

// SkipMessage approves message seq of an event store stream for loaders
// to pass over (operator; audited with the caller and reason, which is
// required): a message that is not a stream amends wrote and bricks its
// aggregate. With dryRun it only returns the plan. A message that reads
// is a *Error with Status 409 and Code "NotCorrupt"; no message there, 404.
func (c *Client) SkipMessage(ctx context.Context, stream string, seq uint64, reason string, dryRun bool) (api.SkipMessagePlan, error) {
	var p api.SkipMessagePlan
	body := api.SkipMessageRequest{Stream: stream, Seq: seq, Reason: reason, DryRun: dryRun}
	return p, c.call(ctx, http.MethodPost, "/api/v1/repair/skip-message", body, nil, &p)
}

// PurgeEntry removes the entry key of bucket that the quarantine lists as
// invalid at revision (operator; logged with the caller and reason, which
// is required). With dryRun it only returns the quarantine's entry. An
// entry the quarantine does not list is a *Error with Status 404; a key
// that changed since, 409 with Code "Changed".
func (c *Client) PurgeEntry(ctx context.Context, bucket, key string, revision uint64, reason string, dryRun bool) (api.PurgeEntryPlan, error) {
	var p api.PurgeEntryPlan
	body := api.PurgeEntryRequest{Bucket: bucket, Key: key, Revision: revision, Reason: reason, DryRun: dryRun}
	return p, c.call(ctx, http.MethodPost, "/api/v1/repair/purge-entry", body, nil, &p)
}
