// Package client is a typed Go client of the amends HTTP API (package
// server), used by the amends command line and usable from scripts and
// services. It depends on the standard library and the light wire types
// of package api only: no NATS, no Prometheus, no server.
//
// # Reading
//
// Get, History, List (one page of an api.Query; follow Page.Next with
// Query.Cursor), Count, Summary and Quarantine read records and the
// quarantine.
//
// # Steering
//
// Prepare, ForcePrepare, ChangeRetrySpec, MarkRecoverable and
// ChangeFunction run one operator command on one record; CommandOptions
// carry the audit reason and an idempotency key. Batch (or BatchPrepare,
// BatchForcePrepare) runs prepare or force-prepare over a filter and
// reports each record's outcome to a BatchProgress while it runs.
//
// # Errors and timeouts
//
// An error answer of the server is a *Error; a call without an answer in
// time matches ErrTimeout (WithTimeout bounds a call, WithIdleTimeout each
// wait of a streamed batch); a request the client refuses to send matches
// ErrInvalidRequest. A Client is safe for concurrent use.
package client
