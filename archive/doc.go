// Package archive keeps the full histories of the records the retention
// sweeper removes (retention.Sweeper), so that they can be read back and
// restored.
//
// An archive is a Sink: a directory (Dir) or a JetStream Object Store
// bucket (ObjectStore), named on the command line as "dir:/path" or
// "objectstore:BUCKET" (Open). Each sweep batch writes one object per
// function whose records it removes, and then a manifest:
//
//	sweep-<batch, 12 digits>-<function hash>.ndjson.gz   the histories
//	sweep-<batch, 12 digits>.manifest.json               what they hold
//
// An object is gzip-compressed NDJSON: one line per stored stream of the
// record (Line: record id, stream sequence, the stream in the event
// store's JSON), the streams of one record together and in version order,
// versions 1 to the last. The manifest lists every object with its
// function, record ids, stream count, size and SHA-256, and is the
// archive's index: an object no manifest names is an interrupted write,
// ignored by List and overwritten by the batch's retry.
//
// WriteSweep returns only after every object and the manifest are stored
// and read back with the digest they were written with: the sweeper
// removes nothing of a batch before that. Reading validates everything it
// parses (sizes, the manifest's fields, each stream with the event
// store's decoder, versions in order, the digest) and never panics.
//
// A Sink is safe for concurrent use; WriteSweep of one batch is not meant
// to run twice at once.
package archive
