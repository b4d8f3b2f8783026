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
// # Requests
//
// Every path parameter, query parameter, header the server stores and body
// field is checked against its limit before anything reaches NATS: record
// ids 1 to MaxIDBytes bytes of UTF-8 without control characters, other
// query values and names MaxParamBytes, Idempotency-Key, X-Request-Id and
// Traceparent MaxHeaderBytes, reasons MaxReasonLength, bodies MaxBodyBytes.
// A query parameter is given at most once; endpoints refuse parameters
// they do not take. Bodies are one JSON object sent as Content-Type
// application/json; an empty body (any content type) means {}. Unknown
// fields and data after the object are refused. apply_retry_spec takes
// Wow's rules plus the API's executionTimeout >= MinExecutionTimeout.
// An Idempotency-Key is bound to its first request (command, record and
// body) for as long as batch results are kept; another request with it is
// a 422 IdempotencyKeyReused.
//
// # Errors
//
// Every error is JSON {code, message, details}; where one field is at
// fault, details.field names it (a query parameter, a body field such as
// "filter.status", a path parameter "id", "view" or "command", a header
// such as "Idempotency-Key" or "Content-Type", or "body" for the body as a
// whole). 400 for a malformed request, 401 without a valid token (the
// scheme "Bearer" in any case), 403 for a viewer sending a command, 404
// for an unknown record or route, 405 with Allow for a known path with
// another method, 409 when the record's state does not allow the command
// (with the aggregate's message), 413 for a body over the limit, 415 for
// a body that is not JSON, 422 for a well-formed command whose values are
// refused (code IllegalArgument or IdempotencyKeyReused), 503 (code
// Unavailable, or NotReady from /readyz) when NATS cannot be reached.
// Nothing else is a 5xx but a 500 Internal for a bug, logged.
//
// # Auth
//
// Bearer tokens carry a name and a role: viewer (read) or operator (read
// and commands). Tokens are compared in constant time. A server without
// tokens accepts every request as actor "local"; CheckBind allows that
// only on a loopback address.
package server
