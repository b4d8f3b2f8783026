// Package kvstore is the one way amends reads and writes a JetStream KV
// bucket: every bucket of the engine (rules, releases, builds, the lease,
// holds, progress, replays, snapshots, notification dedup and digests,
// batch results, views, the skip list) goes through it.
//
// A bucket is described once, by a Spec: its configuration, the settings
// an existing bucket must share with it (Match), the largest value it
// takes (MaxValue) and whether its content may be lost (Disposable, which
// lets Repair delete and create it again). Open creates the bucket or
// binds an existing one, and refuses one whose settings differ with a
// *MismatchError that lists them (ErrMismatch); Repair brings such a
// bucket back to its Spec, the fix `amends serve --repair-buckets` runs.
//
// A Store[T] reads and writes the values of a bucket as T, through the
// bucket's Codec: one decoder per bucket that validates every field
// (ranges, enums, times within sane bounds, references that must hold, the
// key itself) and an encoder. A value that does not decode or validate is
// an *InvalidError naming bucket, key, revision and field (ErrInvalid); it
// is never returned as a value, so it can never be acted on. The Store
// reports it once per revision to its Recorder (the quarantine, as an entry
// of kind "kv": bucket, key, revision, reason), which counts it and logs it
// at most once per interval; by default a quarantine on the bucket's
// JetStream, and if even that cannot be written, a rate-limited log line.
// What the entry guarded decides how to fail safe (a bad rule matches
// nothing, a bad progress holds events, a bad release halts, ...).
//
// Writes: Create, Put, Update and Delete, and Change, the read, change and
// compare-and-set loop every read-modify-write uses. A write refused
// because the key's revision moved is ErrConflict, detected only with
// jetstream.ErrKeyRevisionMismatch and the API error codes 10071 (a single
// replica) and 10164 (a replicated bucket); Change retries it. Values over
// the Spec's MaxValue are refused before they are sent (ErrTooLarge).
//
// Keys: KV keys are the characters [-/_=.a-zA-Z0-9], dot-separated
// tokens. Segment and Segments encode any text as one token (unpadded
// base64url) and back; Hash makes a fixed-length key of any parts. A key
// written by something else that nats.go refuses to address (say "r-ü"
// published raw on $KV.<bucket>.r-ü) is still seen by a watch, reported
// invalid by the decoders, and can be removed with Bucket.PurgeRaw.
//
// The store contract above is a suite: kvstoretest.Run holds a bucket's
// Spec and Codec to it against a real JetStream, and every bucket of the
// engine runs it from its package's tests.
//
// Everything here is safe for concurrent use.
package kvstore
