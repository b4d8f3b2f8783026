// Package kvstoretest is the conformance suite of a bucket-backed store:
// what every kvstore.Store[T] of the engine, with its bucket's Spec and
// Codec, must do against a real JetStream.
//
// Run checks, each in a bucket of its own: the codec's round trip (what is
// written reads back the same, by Get, Scan and a watch), validation on
// read (every stored value the codec must refuse is an *InvalidError
// naming the bucket, key, revision and field, never a value), that the
// decoder never panics (on prefixes and corruptions of valid values),
// that each bad revision is reported to the quarantine once, the
// compare-and-set conflict mapping (Create, Update and Delete against a
// moved key are ErrConflict, and Change retries them to the end), the
// size bound on both sides, and that a watch resumed after a revision
// decodes exactly the later changes. A store package runs it from its
// own tests, where its codec is in reach:
//
//	kvstoretest.Run(t, js, kvstoretest.Case[Rule]{Spec: Spec(1), Codec: ruleCodec, Samples: ..., Bad: ...})
package kvstoretest
