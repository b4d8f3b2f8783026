package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/amends-dev/amends/api"
)

// BatchProgress receives a streamed batch as it runs. Its functions are
// called on the goroutine that called Batch, in the order of the stream;
// either may be nil.
type BatchProgress struct {
	// Start is called once with how many records match and will be touched.
	Start func(api.BatchStart)
	// Outcome is called for every record.
	Outcome func(api.BatchOutcome)
}

// BatchPrepare is Batch of api.CommandPrepare.
func (c *Client) BatchPrepare(ctx context.Context, req api.BatchRequest, p BatchProgress) (api.BatchResult, error) {
	return c.Batch(ctx, api.CommandPrepare, req, p)
}

// BatchForcePrepare is Batch of api.CommandForcePrepare; req.Reason is
// required.
func (c *Client) BatchForcePrepare(ctx context.Context, req api.BatchRequest, p BatchProgress) (api.BatchResult, error) {
	return c.Batch(ctx, api.CommandForcePrepare, req, p)
}

// Batch runs command (one of api.BatchCommands) on the records req.Filter
// selects, streaming its progress to p, and returns the result. A real run
// needs req.RequestID: the same id again returns the stored result
// (Replayed) instead of running twice. The idle timeout bounds the wait
// for the answer and for each line after it; an error matching ErrTimeout
// says the stream stalled (the batch may still be running on the server:
// the same request id reads its result). A request the server refuses is a
// *Error (Status 400 naming the field, as "filter.status"; 404 for a
// command batches do not run).
func (c *Client) Batch(ctx context.Context, command api.Command, req api.BatchRequest, p BatchProgress) (api.BatchResult, error) {
	path := "/api/v1/batch/" + url.PathEscape(string(command))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu sync.Mutex
		te = &timeoutError{method: http.MethodPost, url: c.shown + path, after: c.idle, stream: true}
	)
	idle := time.AfterFunc(c.idle, func() {
		mu.Lock()
		defer mu.Unlock()
		cancel(te)
	})
	defer idle.Stop()
	resp, err := c.do(ctx, http.MethodPost, path, req, http.Header{"Accept": {"application/x-ndjson"}})
	if err != nil {
		return api.BatchResult{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		mu.Lock()
		if context.Cause(ctx) == nil {
			te.lines++
			idle.Reset(c.idle)
		}
		mu.Unlock()
		var line api.BatchLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return api.BatchResult{}, fmt.Errorf("POST %s: line %d of the batch stream is not a batch line: %s", c.shown+path, te.lines, jsonProblem(err))
		}
		if line.Start != nil && p.Start != nil {
			p.Start(*line.Start)
		}
		if line.Outcome != nil && p.Outcome != nil {
			p.Outcome(*line.Outcome)
		}
		if line.Result != nil {
			return *line.Result, nil
		}
	}
	if err := timedOut(ctx); err != nil {
		return api.BatchResult{}, err
	}
	if err := sc.Err(); err != nil {
		return api.BatchResult{}, fmt.Errorf("POST %s: reading the batch stream: %w", c.shown+path, err)
	}
	return api.BatchResult{}, fmt.Errorf("the batch response ended without a result; send the same request id again to read it")
}
