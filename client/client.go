package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/amends-dev/amends/api"
)

// Client calls one amends server. It is safe for concurrent use by
// several goroutines; it keeps no state between calls.
//
// Every call fails with a *Error (errors.As) when the server answers with
// an error, whose Body is the server's {code, message, details}; with an
// error matching ErrTimeout when the server does not answer in time (see
// WithTimeout, WithIdleTimeout); with an error matching ErrInvalidRequest
// for a request the client will not send; and otherwise with an error
// naming the request, such as a refused connection.
//
// A request carries the W3C trace context (traceparent, tracestate) of
// its ctx's span, if it has one, so that the server's span of it joins the
// caller's trace.
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
	// Body is the server's {code, message, details}; for an answer that
	// is not the API's, Code is the status text and Message names the
	// request and quotes the answer. Numbers in Details are json.Number,
	// so that epoch-ms times and counts keep every digit; read them with
	// Int and Time.
	Body api.Error
	// Method and Path are the request's (the path without its query).
	Method, Path string
	// RecordID is the record the request was about (its path is under
	// /api/v1/records/{id}), "" for other requests.
	RecordID string
}

// Error returns the code, the status, the record and the server's
// message: "IllegalState (409) on record 4955…: ExecutionFailed can not
// retry.".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Body.Code)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (%d)", e.Status)
	}
	if e.RecordID != "" {
		b.WriteString(" on record " + e.RecordID)
	}
	b.WriteString(": " + e.Body.Message)
	return b.String()
}

// String returns the detail key as a string, "" if it is not one.
func (e *Error) String(key string) string {
	s, _ := e.Body.Details[key].(string)
	return s
}

// Int returns the detail key as a whole number, and whether it is one.
func (e *Error) Int(key string) (int64, bool) {
	switch v := e.Body.Details[key].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64: // a Details filled by hand
		return int64(v), v == float64(int64(v))
	case int64:
		return v, true
	case int:
		return int64(v), true
	}
	return 0, false
}

// Time returns the detail key, an epoch-ms time such as "timeoutAt" or
// "nextRetryAt", as a time, and whether it is one.
func (e *Error) Time(key string) (time.Time, bool) {
	ms, ok := e.Int(key)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// Accepted returns the "accepted" detail of a refused command: the wire
// names of the replay commands the record would accept (see
// aggregate.(*Error).Details); nil if the refusal carries none.
func (e *Error) Accepted() []string {
	list, ok := e.Body.Details["accepted"].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, a := range list {
		if s, ok := a.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// recordOf returns the record id of a path under /api/v1/records/, "" for
// other paths.
func recordOf(path string) string {
	rest, ok := strings.CutPrefix(pathOnly(path), "/api/v1/records/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	return id
}

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
	// The caller's trace, if ctx has one: the server's span of this
	// request becomes its child.
	traceContext.Inject(ctx, propagation.HeaderCarrier(req.Header))
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
		e := &Error{Status: resp.StatusCode, Method: method, Path: pathOnly(path), RecordID: recordOf(path)}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&e.Body) != nil || e.Body.Message == "" {
			e.Body.Code = http.StatusText(resp.StatusCode)
			e.Body.Message = fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
		}
		return nil, e
	}
	return resp, nil
}

// traceContext is the W3C Trace Context propagator: fixed, so that what a
// request carries does not depend on the program's global settings.
var traceContext propagation.TextMapPropagator = propagation.TraceContext{}

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

// query is v as a query string, "" if v is empty.
func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
