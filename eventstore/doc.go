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
// # The store contract
//
// Store is what an event store offers the rest of amends, in three small
// parts: a Reader of histories (LoadLast, Load, LoadAt, LoadVersion,
// LastVersion, GetSeq), an Appender (Append, with the optimistic
// concurrency and idempotency above) and a Feed for subscribers. processor,
// projection and notify take a Store; aggregate.Service takes its own
// smaller interface, which every Store satisfies. eventstore/jsstore is
// the JetStream implementation.
//
// Every stream a store hands out has its place set: Seq, the stream's
// sequence in its bounded context's log, and PrevSeq, the sequence of the
// aggregate's previous stream (0 for version 1). Nothing outside the store
// reads how it keeps them (for jsstore, message headers); a subscriber
// learns them from Feed.DecodeMsg.
//
// Subscribers consume the log with the transport's own durable consumers:
// the Feed says which log and filter to consume (StreamName,
// FilterSubject) and decodes what arrives (DecodeMsg). Its type parameter
// is the transport's message type (jetstream.Msg for jsstore), so this
// package stays free of any transport.
//
// # Errors
//
// Every error an implementation returns for a caller mistake matches
// ErrInvalid and names the field and the rule; a missing aggregate or stream
// matches ErrNotFound; a lost race matches ErrConflict (a *ConflictError);
// a stored value the store did not write, or one stored out of its place,
// matches ErrCorrupt and names its sequence, and never panics; existing
// storage configured otherwise matches ErrIncompatible. Callers match these
// sentinels with errors.Is, never an implementation's own errors.
//
// # Concurrency
//
// A Store is safe for concurrent use by any number of goroutines and
// processes: of several appends at one version exactly one wins, and a
// Store's reads never go back behind what it appended or read before.
//
// # Conformance
//
// eventstore/eventstoretest is the contract's suite, in the style of
// Watermill's pubsub/tests: an implementation calls eventstoretest.Run
// from its tests with a constructor of fresh stores, and the suite checks
// every operation above, each on a store of its own, including the
// errors, concurrent appends, consuming the log from a position and
// corrupt values. jsstore runs it on file and memory storage.
package eventstore
