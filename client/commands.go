package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// CommandOptions are what every operator command carries besides its own
// fields.
type CommandOptions struct {
	// Reason is recorded in the record's history with the caller's token
	// name: one line, at most 1024 bytes. ForcePrepare and ChangeFunction
	// take theirs as an argument; there Reason must be empty or the same.
	Reason string
	// IdempotencyKey, if set, makes a retry of the same call run the
	// command once: the server answers the first run's outcome with
	// Duplicate set. A key is bound to its first request (command, record
	// and body); sending it with another is a *Error with Status 422 and
	// Code "IdempotencyKeyReused". Empty sends none, so each call runs.
	IdempotencyKey string
	// Probe, for Prepare and ForcePrepare, makes the replay the probe of
	// the function's circuit when the circuit is not closed. Without it
	// the server refuses to prepare such a record: a *Error with Status 409
	// and Code "CircuitOpen" naming the circuit.
	Probe bool
}

// The commands' errors: an unknown id is a *Error with Status 404
// ("NotFound"); a command the record's state refuses, a 409 whose Body
// carries the aggregate's message and Details the record's status,
// retries and the commands it would accept ("accepted"); a value the
// command refuses, a 422 ("IllegalArgument") or 400 naming the field in
// Details["field"].

// Prepare asks for a replay of the record now (prepare_compensation):
// accepted for a FAILED record, or a PREPARED one whose attempt timed
// out, while retries remain, and while the function's circuit is closed
// (see CommandOptions.Probe). Errors: see CommandOptions.
func (c *Client) Prepare(ctx context.Context, id string, opts CommandOptions) (api.CommandResponse, error) {
	return c.command(ctx, id, api.CommandPrepare, api.PrepareRequest{Reason: opts.Reason, Probe: opts.Probe}, opts)
}

// ForcePrepare asks for a replay beyond the retry limit
// (force_prepare_compensation); reason is required, for the audit trail.
// A reason that disagrees with opts.Reason is an error matching
// ErrInvalidRequest; see Prepare for the others.
func (c *Client) ForcePrepare(ctx context.Context, id, reason string, opts CommandOptions) (api.CommandResponse, error) {
	r, err := oneReason(reason, opts)
	if err != nil {
		return api.CommandResponse{}, err
	}
	return c.command(ctx, id, api.CommandForcePrepare, api.PrepareRequest{Reason: r, Probe: opts.Probe}, opts)
}

// ChangeRetrySpec replaces the record's retry spec (apply_retry_spec):
// spec's MaxRetries, MinBackoff and ExecutionTimeout (seconds), and the
// optional MaxBackoff and Jitter, from the next prepare on. The server refuses negative values, an
// ExecutionTimeout under 1 and a spec whose last backoff overflows, with a
// 422 naming the field.
func (c *Client) ChangeRetrySpec(ctx context.Context, id string, spec aggregate.RetrySpec, opts CommandOptions) (api.CommandResponse, error) {
	return c.command(ctx, id, api.CommandApplyRetrySpec, api.RetrySpecRequest{
		MaxRetries: spec.MaxRetries, MinBackoff: spec.MinBackoff, ExecutionTimeout: spec.ExecutionTimeout,
		MaxBackoff: spec.MaxBackoff, Jitter: spec.Jitter, Reason: opts.Reason,
	}, opts)
}

// MarkRecoverable reclassifies the record's failure (mark_recoverable):
// RECOVERABLE and UNKNOWN records are retried by the scheduler,
// UNRECOVERABLE ones are not.
func (c *Client) MarkRecoverable(ctx context.Context, id string, r aggregate.Recoverability, opts CommandOptions) (api.CommandResponse, error) {
	return c.command(ctx, id, api.CommandMarkRecoverable, api.MarkRecoverableRequest{Recoverable: r, Reason: opts.Reason}, opts)
}

// ChangeFunction retargets the record at fn, after the failed function
// was renamed or moved (change_function); reason is required. A reason
// that disagrees with opts.Reason is an error matching ErrInvalidRequest.
func (c *Client) ChangeFunction(ctx context.Context, id string, fn aggregate.FunctionInfo, reason string, opts CommandOptions) (api.CommandResponse, error) {
	r, err := oneReason(reason, opts)
	if err != nil {
		return api.CommandResponse{}, err
	}
	return c.command(ctx, id, api.CommandChangeFunction, api.ChangeFunctionRequest{
		FunctionKind: fn.FunctionKind, ContextName: fn.ContextName, ProcessorName: fn.ProcessorName, Name: fn.Name, Reason: r,
	}, opts)
}

// oneReason is the reason of a command that takes it as an argument.
func oneReason(reason string, opts CommandOptions) (string, error) {
	if opts.Reason != "" && opts.Reason != reason {
		return "", invalidRequest("the reason argument and CommandOptions.Reason differ; give the reason once")
	}
	return reason, nil
}

// command sends operator command name with body to record id.
func (c *Client) command(ctx context.Context, id string, name api.Command, body any, opts CommandOptions) (api.CommandResponse, error) {
	h := http.Header{}
	if opts.IdempotencyKey != "" {
		h.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	var out api.CommandResponse
	return out, c.call(ctx, http.MethodPost, "/api/v1/records/"+url.PathEscape(id)+"/"+url.PathEscape(string(name)), body, h, &out)
}
