// Package eventstore defines the envelope amends stores and the contract an
// event store keeps. It is pure: no I/O, no clock, no NATS.
//
// # Streams, versions and atomicity
//
// A Stream is everything one command appended to one aggregate: one or more
// Events plus the metadata of the command (command id, request id, trace id,
// headers, creation time). An aggregate's history is the ordered list of its
// streams; the n-th stream has Version n (1-based). Appending a stream is
// atomic: either all of its events become part of the history or none do.
// NewStream builds a stream from event names and bodies, with the ids and
// the time given to it; jsstore.Store.AppendEvents does that with random
// ids and its clock, and a store stamps a stream whose CreateTime is 0.
//
// # Optimistic concurrency and idempotency
//
// An append names the version the writer last saw (0 for a new aggregate).
// If another stream was appended in between, the store rejects the append
// with an error matching ErrConflict and nothing is written. A stream's ID is
// its idempotency key: appending the same stream (same ID at the same
// version) twice, for example after a lost acknowledgement, returns the
// stream that was committed the first time instead of a conflict.
//
// # Carried state
//
// A Stream may carry the aggregate's state after it (Stream.State). Readers
// that need only the current state then read one stream, the last, instead
// of replaying the history.
//
// # Errors
//
// Every error an implementation returns for a caller mistake matches
// ErrInvalid and names the field and the rule; a missing aggregate or stream
// matches ErrNotFound; a lost race matches ErrConflict.
package eventstore
