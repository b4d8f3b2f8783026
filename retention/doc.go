// Package retention removes finished ExecutionFailed records past their
// retention: SUCCEEDED records, and optionally FAILED UNRECOVERABLE ones
// (amends has no "resolved" state: an unrecoverable record is the one the
// scheduler never retries). docs/retention.md is the manual.
//
// # Contract
//
//   - A Sweeper lists candidates from the index, oldest first, a batch
//     (Config.Batch) at a time, and reads each one's last stream to check
//     that it is still finished and old: a record that failed again is
//     left alone.
//   - A batch is archived first (package archive, if Config.Archive is
//     set), then recorded in the retention bucket (Open, DefaultBucket),
//     counted in the tallies per function, error code and fingerprint,
//     and only then removed from the compensation stream
//     (jsstore.Store.Remove) and the views bucket, so the index drops it.
//     A sweeper that stops at any step finishes the batch on its next
//     pass; each record is counted once and no batch number is used twice.
//   - The stored sweep state and tallies are validated on every read
//     (DecodeSweepState, DecodeTally). An invalid sweep state halts the
//     sweeper (ErrInvalid: nothing is removed) until it is repaired; an
//     invalid tally is quarantined and replaced.
//   - A stream that denies purges (jsstore.ErrRemovalDenied) removes
//     nothing until it is migrated.
//
// The scheduler runs a Sweeper's passes while it holds its lease
// (scheduler.WithRetention); Sweep runs one pass and SweepAll the whole
// backlog, for tools and benchmarks.
//
// # Errors and concurrency
//
// New returns an error wrapping ErrInvalidOption that names the field out
// of bounds. A Sweeper and a Store are safe for concurrent use; Sweeps run
// one at a time.
package retention
