package eventstore

import "context"

// Reader reads aggregates' histories. Every method is safe for concurrent
// use. A read never goes back behind what the same Store appended or read
// before (on a replicated store it asks the leader rather than a replica
// that lags).
//
// Errors: a malformed aggregate id, a version or sequence 0 matches
// ErrInvalid and names the field; an aggregate, version or sequence that
// does not exist matches ErrNotFound; a stored value that is not a stream
// the store wrote at that place matches ErrCorrupt and names its sequence.
// A read never panics on what it finds in the store. Other errors (the
// transport, ctx) are returned wrapped.
type Reader interface {
	// LoadLast returns the aggregate's latest stream.
	LoadLast(ctx context.Context, a AggregateID) (Stream, error)
	// Load returns the aggregate's streams from version from (1 if 0) to
	// the latest, in version order; an empty slice if from is past the
	// latest version.
	Load(ctx context.Context, a AggregateID, from uint64) ([]Stream, error)
	// LoadAt returns the aggregate's streams from version from (1 if 0) to
	// the one stored at sequence seq, in version order, whatever was
	// appended after it. A seq that holds another aggregate's stream
	// matches ErrCorrupt.
	LoadAt(ctx context.Context, a AggregateID, from, seq uint64) ([]Stream, error)
	// LoadVersion returns the aggregate's stream at version v.
	LoadVersion(ctx context.Context, a AggregateID, v uint64) (Stream, error)
	// LastVersion returns the aggregate's latest version without decoding
	// its stream.
	LastVersion(ctx context.Context, a AggregateID) (uint64, error)
	// GetSeq returns the stream stored at sequence seq of the bounded
	// context's log, whichever aggregate it belongs to.
	GetSeq(ctx context.Context, context string, seq uint64) (Stream, error)
}

// Appender appends streams. It is safe for concurrent use: of several
// appends at one version exactly one wins.
type Appender interface {
	// Append stores st as the aggregate's version expectedVersion+1,
	// atomically: all of its events or none. st.Version must be 0 (it is
	// then set) or expectedVersion+1; a CreateTime of 0 is set to the
	// store's clock. It returns the committed stream with Seq and PrevSeq
	// set.
	//
	// If the aggregate is at another version nothing is written and the
	// error is a *ConflictError matching ErrConflict. Appending a stream
	// whose ID is already committed at that version (a retry after a lost
	// acknowledgement) returns the committed stream and no error; an ID
	// already used by another stream (within the store's duplicate
	// window) matches ErrInvalid. A stream that
	// breaks a rule of Stream.Validate, or whose stored size exceeds the
	// store's limit, matches ErrInvalid and names the field or the limit;
	// nothing is written then.
	Append(ctx context.Context, st Stream, expectedVersion uint64) (Stream, error)
}

// Feed is what a subscriber needs to consume the store's log with the
// transport's own durable consumers: where the log is, which part of it
// holds a bounded context's (or an aggregate type's) streams, and how to
// turn a delivered message of type M back into a Stream. M is the
// transport's message type (jetstream.Msg for jsstore); this package
// names no transport. Every method is safe for concurrent use.
type Feed[M any] interface {
	// Provision makes sure the logs of the given bounded contexts exist
	// with the store's settings. An existing log configured otherwise
	// matches ErrIncompatible (it is never reconfigured), an invalid
	// context name ErrInvalid. Calling it again is cheap.
	Provision(ctx context.Context, contexts ...string) error
	// StreamName returns the name, in the transport, of the log that holds
	// a bounded context's streams.
	StreamName(context string) string
	// FilterSubject returns the filter, in the transport, of a context's
	// streams in its log, or of one aggregate type's when aggregateType is
	// not empty.
	FilterSubject(context, aggregateType string) string
	// Subject returns the subject, in the transport, of aggregate a's
	// streams: the one its messages carry (a subscriber orders work per
	// aggregate by it). An invalid a matches ErrInvalid.
	Subject(a AggregateID) (string, error)
	// Replicas returns how many copies of each stream the store keeps: a
	// subscriber keeps what it stores beside the log (quarantine, progress)
	// as safe.
	Replicas() int
	// DecodeMsg decodes a message a subscriber received from the log, with
	// the checks of a read, and sets Seq and PrevSeq from where the message
	// is stored. An error matches ErrCorrupt: such a message can never be
	// processed and should be terminated. It never panics.
	DecodeMsg(m M) (Stream, error)
}

// Store is the event store's contract: reads, appends and the feed of its
// log to subscribers. processor, projection and notify take a Store;
// eventstoretest.Run checks an implementation against this contract.
type Store[M any] interface {
	Reader
	Appender
	Feed[M]
}
