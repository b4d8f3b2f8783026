// Package client is a Go client of the amends HTTP API (package server),
// used by the amends command line and usable from scripts and services.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

// Client calls one amends server. It is safe for concurrent use.
//
// Every call fails with a *Error (errors.As) when the server answers with
// an error, whose Body is the server's {code, message, details}; with an
// error matching ErrTimeout when the server does not answer in time (see
// WithTimeout, WithIdleTimeout); and otherwise with an error naming the
// request, such as a refused connection.
type Client struct {
	base    string
	shown   string // base without a password, for messages
	token   string
	http    *http.Client
	timeout time.Duration
	idle    time.Duration
}

// DefaultTimeout is the timeout of a call, and the idle timeout of a
// streamed batch, unless an Option sets another.
const DefaultTimeout = 30 * time.Second

// Option configures a Client.
type Option func(*Client) error

// WithTimeout bounds every call that is not streamed: from sending the
// request to reading the whole answer. d must be positive; the default is
// DefaultTimeout. A call that runs out of time returns an error matching
// ErrTimeout that names the request and d.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("the timeout must be positive, got %s: %w", d, ErrInvalidOption)
		}
		c.timeout = d
		return nil
	}
}

// WithIdleTimeout bounds the waits of a streamed batch: for the answer to
// begin and then for each further line. A batch as a whole may take
// longer. d must be positive; the default is DefaultTimeout. A stream that
// stalls returns an error matching ErrTimeout.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("the idle timeout must be positive, got %s: %w", d, ErrInvalidOption)
		}
		c.idle = d
		return nil
	}
}

// New returns a client of the server at baseURL ("http://127.0.0.1:8080")
// sending token as bearer token (none if empty). hc nil means
// http.DefaultClient; the timeouts of opts apply on top of hc's own. The
// error names a bad address, or wraps ErrInvalidOption.
func New(baseURL, token string, hc *http.Client, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server address %q must be an http or https URL such as http://127.0.0.1:8080", baseURL)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server address %q must be an http or https URL such as http://127.0.0.1:8080", u.Redacted())
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), shown: strings.TrimSuffix(u.Redacted(), "/"), token: token, http: hc, timeout: DefaultTimeout, idle: DefaultTimeout}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Error is an error response of the server.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Body is the server's {code, message, details}.
	Body server.Error
}

// Error returns the server's message.
func (e *Error) Error() string { return e.Body.Message }

func (c *Client) do(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if te := timedOut(ctx); te != nil {
			return nil, te
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and address
		}
		return nil, fmt.Errorf("%s %s: %w (is amends serve running there? set --server or AMENDS_SERVER)", method, c.shown+pathOnly(path), err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if te := timedOut(ctx); err != nil && te != nil {
			return nil, te
		}
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(data, &e.Body) != nil || e.Body.Message == "" {
			e.Body.Code = http.StatusText(resp.StatusCode)
			e.Body.Message = fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
		}
		return nil, e
	}
	return resp, nil
}

// timedOut returns the *timeoutError that ended ctx, if one did.
func timedOut(ctx context.Context) error {
	var te *timeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	return nil
}

// call sends a request and decodes its answer into out, all within the
// client's timeout.
func (c *Client) call(ctx context.Context, method, path string, body any, header http.Header, out any) error {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, &timeoutError{method: method, url: c.shown + pathOnly(path), after: c.timeout})
	defer cancel()
	resp, err := c.do(ctx, method, path, body, header)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if te := timedOut(ctx); te != nil {
			return te
		}
		return fmt.Errorf("%s %s: the answer is not the API's JSON: %s", method, c.shown+pathOnly(path), jsonProblem(err))
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, nil, nil, out)
}

// List returns a page of records; params are the list's query parameters
// (filters, sort, order, limit, cursor). view, if set, lists that view.
func (c *Client) List(ctx context.Context, view string, params url.Values) (projection.Page, error) {
	var p projection.Page
	path := "/api/v1/records"
	if view != "" {
		path = "/api/v1/views/" + url.PathEscape(view)
	}
	return p, c.get(ctx, path+query(params), &p)
}

// Count counts the records matching the filter parameters.
func (c *Client) Count(ctx context.Context, params url.Values) (int, error) {
	var r server.CountResponse
	return r.Count, c.get(ctx, "/api/v1/count"+query(params), &r)
}

// Summary returns the failure summary of the records matching params.
func (c *Client) Summary(ctx context.Context, params url.Values) (projection.Summary, error) {
	var s projection.Summary
	return s, c.get(ctx, "/api/v1/summary"+query(params), &s)
}

// Quarantine returns a page of the messages consumers quarantined, oldest
// first; params are the query parameters (consumer, limit, cursor).
func (c *Client) Quarantine(ctx context.Context, params url.Values) (server.QuarantinePage, error) {
	var p server.QuarantinePage
	return p, c.get(ctx, "/api/v1/quarantine"+query(params), &p)
}

// Get returns one record.
func (c *Client) Get(ctx context.Context, id string) (projection.View, error) {
	var v projection.View
	return v, c.get(ctx, "/api/v1/records/"+url.PathEscape(id), &v)
}

// History returns a record's commands, newest first.
func (c *Client) History(ctx context.Context, id string) ([]server.HistoryEntry, error) {
	var h []server.HistoryEntry
	return h, c.get(ctx, "/api/v1/records/"+url.PathEscape(id)+"/history", &h)
}

// Command runs an operator command (server.OperatorCommands) on a record.
// body holds the command's fields and "reason"; idempotencyKey, if set,
// makes a retry of the same call run the command once.
func (c *Client) Command(ctx context.Context, id, command string, body map[string]any, idempotencyKey string) (server.CommandResponse, error) {
	h := http.Header{}
	if idempotencyKey != "" {
		h.Set("Idempotency-Key", idempotencyKey)
	}
	if body == nil {
		body = map[string]any{}
	}
	var out server.CommandResponse
	return out, c.call(ctx, http.MethodPost, "/api/v1/records/"+url.PathEscape(id)+"/"+url.PathEscape(command), body, h, &out)
}

// BatchProgress receives a streamed batch as it runs.
type BatchProgress struct {
	// Start is called once with how many records match and will be touched.
	Start func(server.BatchStart)
	// Outcome is called for every record.
	Outcome func(server.BatchOutcome)
}

// Batch runs a batch command, streaming its progress to p. The idle
// timeout bounds the wait for the answer and for each line after it; an
// error matching ErrTimeout says the stream stalled (the batch may still be
// running on the server: the same request id reads its result).
func (c *Client) Batch(ctx context.Context, command string, req server.BatchRequest, p BatchProgress) (server.BatchResult, error) {
	path := "/api/v1/batch/" + url.PathEscape(command)
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
		return server.BatchResult{}, err
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
		var line server.BatchLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return server.BatchResult{}, fmt.Errorf("POST %s: line %d of the batch stream is not a batch line: %s", c.shown+path, te.lines, jsonProblem(err))
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
		return server.BatchResult{}, err
	}
	if err := sc.Err(); err != nil {
		return server.BatchResult{}, fmt.Errorf("POST %s: reading the batch stream: %w", c.shown+path, err)
	}
	return server.BatchResult{}, fmt.Errorf("the batch response ended without a result; send the same request id again to read it")
}

// pathOnly is path without its query.
func pathOnly(path string) string { return strings.SplitN(path, "?", 2)[0] }

// jsonProblem describes a decoding error without Go's type names.
func jsonProblem(err error) string {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("%s is a JSON %s, not what the API sends", te.Field, te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("a JSON %s where the API sends something else", te.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the answer ended early"
	}
	return err.Error()
}

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
