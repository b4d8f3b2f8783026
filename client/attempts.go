package client

import (
	"context"
	"net/url"

	"github.com/amends-dev/amends/api"
)

// Attempts returns a record's attempt timeline, oldest first: the first
// failure and each replay with its run, and the final failure where no
// automatic retry was left. An unknown id is a *Error with Status 404.
// Safe for concurrent use.
func (c *Client) Attempts(ctx context.Context, id string) (api.Attempts, error) {
	var a api.Attempts
	return a, c.get(ctx, "/api/v1/records/"+url.PathEscape(id)+"/attempts", &a)
}
