// Package server is the amends control plane over HTTP: a JSON API under
// /api/v1 to find and steer ExecutionFailed records, described by the
// OpenAPI document at /api/v1/openapi.json, plus /healthz, /readyz and
// Prometheus metrics at /metrics.
//
// # Reading
//
// Lists, counts, the six operator views and the failure summary come from
// the projection's in-memory index; one record comes from the views
// bucket; a record's history comes from the event store.
//
// # Steering
//
// The operator commands (prepare, force-prepare, apply retry spec, mark
// recoverable, change function) run through aggregate.Service with the
// caller's token name as actor and the request's reason; force-prepare and
// change-function require a reason. An Idempotency-Key header becomes the
// command id, so a retried request does not run twice. Batches of prepare
// or force-prepare over a filter can be dry-run; real runs are rate
// limited, report every record's outcome and are idempotent by request id.
//
// # Errors
//
// Every error is JSON {code, message, details}: 400 for a malformed request
// (the message names the field), 401 without a valid token, 403 for a
// viewer sending a command, 404 for an unknown record, 409 when the record's
// state does not allow the command (with the aggregate's message), 422 for
// a well-formed command whose values the aggregate rejects.
//
// # Auth
//
// Bearer tokens carry a name and a role: viewer (read) or operator (read
// and commands). Tokens are compared in constant time. A server without
// tokens accepts every request as actor "local"; CheckBind allows that
// only on a loopback address.
package server
