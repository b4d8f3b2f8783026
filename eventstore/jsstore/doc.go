// Package jsstore is the JetStream implementation of the amends event
// store: a Store keeps the eventstore contract (eventstore.Store, its log
// delivered as jetstream.Msg) and passes the eventstore/eventstoretest
// suite. Its errors are eventstore's sentinels; ErrInvalidOption is its
// own.
//
// # Layout
//
// Each bounded context has one stream, named "<stream prefix><context>"
// ("AMENDS_orders" by default), holding the subjects
// "<subject prefix>.<context>.>" ("amends.orders.>"). Each aggregate has
// one subject, "<prefix>.<context>.<type>.<encoded id>", and each
// eventstore.Stream is one message on it: the JSON document from
// eventstore.Encode plus the headers Nats-Msg-Id (the stream id),
// Amends-Version, Amends-Prev-Seqs and Amends-First-Seq. Ids that are not
// plain subject tokens are encoded reversibly (EncodeID). Only this package
// reads those headers: what they say reaches callers as Stream.Version,
// Seq and PrevSeq (a test scans the module for readers elsewhere).
//
// Streams are created with file storage (or memory), a replica count,
// unlimited retention, deny-delete and deny-purge, direct gets allowed, a
// max message size and a duplicate window. An existing stream whose
// settings differ is reported with eventstore.ErrIncompatible; it is never
// reconfigured.
//
// # Concurrency and idempotency
//
// Append publishes with Nats-Expected-Last-Subject-Sequence set to the
// sequence of the version the writer expects, so exactly one of several
// concurrent appends at one version wins and the others get
// eventstore.ErrConflict (JetStream codes 10071 on single-replica and 10164
// on replicated streams both become it). JetStream checks the expected
// sequence before the duplicate id, so a retried append whose first attempt
// committed is seen as a conflict by the server; Append then reads the
// stream at that version from the stream leader and, if it carries the same
// stream id, returns it as the committed result.
//
// The store remembers the last position of recently used aggregates, so an
// append right after a load or another append costs one publish.
//
// # Reading
//
// JetStream keeps no per-subject index of a history, so an aggregate's
// earlier streams are found through the Amends-Prev-Seqs header of each
// message: a short tail is read with direct gets by sequence, a long history
// with batch direct gets starting at the aggregate's first sequence, in pages
// of 512 messages. No read creates a consumer.
//
// Nothing a message says is trusted to size an allocation or a loop. Its
// position headers must agree with where it is stored (a version no larger
// than the messages between the aggregate's first sequence and its own, a
// previous-sequence list of the right length, descending, from the first
// sequence), and every message read by sequence or walked to must be on the
// aggregate's subject, at the expected version, with the same first
// sequence. Anything else fails the read with eventstore.ErrCorrupt, naming the
// message's sequence and subject and the header at fault.
//
// # Replicas that lag
//
// On a replicated stream a direct get may be answered by a replica that
// has not applied the latest writes. That loses no write (an append at a
// passed version conflicts on the leader), but a decision on it can be
// wrong. So no read goes back behind what the store has seen committed:
// it remembers the position of recently used aggregates (its appends and
// reads, a conflict's answer, newer messages DecodeMsg decodes) and asks
// the leader again when a direct get answers older or misses a known
// message. LoadLastIfChanged never takes an older answer; knowing the
// position, it only asks for a message after it. LoadLastFromLeader
// reads from the leader for a decision that rests on the read
// (aggregate.Service asks it before any rejection or "not found"). A
// write by another process may still read older: an append on it only
// conflicts. LaggingReads counts the reads that found a replica behind.
//
// # Durability
//
// A file stream on one server acknowledges a write before it is fsynced
// (the server's sync interval, 2 minutes by default); a replicated stream is
// what makes an acknowledged write survive the loss of a machine. The
// server option sync_always trades most of the append rate for fsync on
// every write.
//
// A Store is safe for concurrent use.
package jsstore
