// Package quarantine keeps a durable, listable trace of the messages a
// consumer can never handle, so that it can terminate them instead of
// retrying them forever, and keep handling the good messages behind them.
//
// A consumer that meets such a message (it does not decode, its history is
// corrupt, the view it would produce could not be read back, or a
// transient error outlived its bounded retries) calls Quarantine.Record
// and then terminates the message (Term). Record writes an Entry (stream,
// sequence, subject, consumer, reason, error, deliveries, time) to a small
// JetStream stream, DefaultStream, counts it by consumer and reason, and
// logs it at most once per interval for each consumer and reason. List
// pages through the entries in the order they were quarantined.
//
// The quarantine also keeps the entries of KV buckets that their decoder
// refuses (RecordKV): an Entry of Kind "kv" with the bucket and key, the
// bucket's stream (KV_<bucket>) and the entry's revision as stream and
// sequence, the bucket as consumer and ReasonInvalidEntry. Those entries
// are skipped by the buckets' users (see kvstore), never acted
// on; FindKV reads one back, for a repair.
//
// Transient errors are retried with a bounded backoff: Retry.Delay grows
// with the number of deliveries up to a cap, and Retry.Exhausted says when
// a message has been delivered often enough to be quarantined
// (ReasonRetriesExhausted).
//
// # Why a stream and not a KV bucket
//
// The entries are a log: listed oldest first, paged by their sequence,
// bounded in number (the oldest are dropped first). A stream gives that
// directly; a KV bucket has no order to page by. Each entry has its own
// subject (consumer, source stream and sequence) and the stream keeps one
// message per subject, so quarantining a message again replaces its entry
// instead of adding one, as a KV key would.
package quarantine
