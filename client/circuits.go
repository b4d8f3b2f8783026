package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/amends-dev/amends/api"
)

// Circuits lists the functions' circuits that were ever written (a
// function without one is CLOSED), by function, and the stored ones that
// do not validate. A server that keeps no circuits answers a *Error with
// Status 404.
func (c *Client) Circuits(ctx context.Context) (api.CircuitList, error) {
	var l api.CircuitList
	return l, c.get(ctx, "/api/v1/circuits", &l)
}

// Circuit returns the circuit of function, CONTEXT.PROCESSOR.NAME, read
// fresh (CLOSED and not Stored if it never opened). A malformed function
// is a *Error with Status 400 naming it; a stored circuit that does not
// validate is Status 409.
func (c *Client) Circuit(ctx context.Context, function string) (api.Circuit, error) {
	var v api.Circuit
	return v, c.get(ctx, "/api/v1/circuits/"+url.PathEscape(function), &v)
}

// OpenCircuit opens the circuit of function with a reason (required: 400
// without one), audited: the function is not called, its events and
// replays are recorded at once with errorCode CircuitOpen, and no probe
// closes it until CloseCircuit. dryRun says what the circuit would become
// and changes nothing. Needs an operator token.
func (c *Client) OpenCircuit(ctx context.Context, function, reason string, dryRun bool) (api.CircuitChange, error) {
	return c.circuitAction(ctx, function, "open", reason, dryRun)
}

// CloseCircuit closes the circuit of function with a reason, audited: the
// function is called again and the scheduler drains the incident's
// records. dryRun as for OpenCircuit. Needs an operator token.
func (c *Client) CloseCircuit(ctx context.Context, function, reason string, dryRun bool) (api.CircuitChange, error) {
	return c.circuitAction(ctx, function, "close", reason, dryRun)
}

func (c *Client) circuitAction(ctx context.Context, function, verb, reason string, dryRun bool) (api.CircuitChange, error) {
	var ch api.CircuitChange
	return ch, c.call(ctx, http.MethodPost, "/api/v1/circuits/"+url.PathEscape(function)+"/"+verb, api.CircuitAction{Reason: reason, DryRun: dryRun}, nil, &ch)
}

// Drains lists the recovery drains by function. A server that keeps
// none answers a *Error with Status 404.
func (c *Client) Drains(ctx context.Context) (api.DrainList, error) {
	var l api.DrainList
	return l, c.get(ctx, "/api/v1/drains", &l)
}
