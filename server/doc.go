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
// application/json (no parameter but charset=utf-8); an empty body (any
// content type) means {}. Field names match exactly; unknown fields, a
// field given twice, invalid UTF-8 (lone surrogate escapes included) and
// data after the object are refused; reasons refuse format characters
// (bidi overrides, zero-width characters) and line separators. A command's
// Traceparent must be a W3C traceparent. A body must arrive within
// Config.BodyTimeout (408 otherwise). Paths must be canonical. The Host
// header must name the server (Config.AllowedHosts; 421 otherwise), the
// defence against DNS rebinding. apply_retry_spec takes
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
// (with the aggregate's message), 408 for a body that does not arrive in
// time, 413 for a body over the limit, 415 for a body that is not JSON,
// 421 for a Host the server does not answer to, 422 for a well-formed
// command whose values are refused (code IllegalArgument or
// IdempotencyKeyReused), 429 with Retry-After for a client over its budget
// of failed authentications, 503 (code Unavailable, or NotReady from
// /readyz) when NATS or the OIDC issuer cannot be reached.
// Nothing else is a 5xx but a 500 Internal for a bug, logged.
//
// # Auth
//
// Bearer tokens carry a name and a role: viewer (read) or operator (read
// and commands), optionally an expiry; the tokens file stores their
// secrets' hashes (HashSecret, TokenLine), and secrets are compared through
// their hashes in constant time. SetTokens replaces them at once, revoking
// the sessions and cancelling the requests of every token it removes or
// changes. With Config.OIDC, an issuer's JWTs are bearer tokens too,
// checked against its JWKS, their role from a claim, and the dashboard
// signs in through the issuer. A server without tokens or OIDC accepts
// every request as actor "local"; CheckBind allows that only on a loopback
// address.
//
// The dashboard's sessions (session.go) are kept in a KV bucket every
// server shares (Config.Sessions, OpenSessions; Run follows it), at most
// MaxSessionsPerPrincipal per principal; signing out ends the session's
// requests in flight, live streams included. Failed authentications are
// budgeted per client address and sign-ins per principal (AuthLimits), and
// recorded with sign-ins and sign-outs in the audit log (Config.Audit, GET
// /api/v1/audit). Behind Config.TrustedProxies the client's address and
// scheme come from X-Forwarded-For and -Proto; answers over TLS carry HSTS.
// docs/security.md has the whole picture.
package server
