// Package index is the read side of the ExecutionFailed records: a small
// in-memory database that answers what operators and the scheduler ask
// ("what is failing, where, since when, what is due") over millions of
// records, with the answer the aggregate would give. It does no I/O:
// projection.Index fills it from the views bucket and keeps it current by
// watching the bucket.
//
// # Records
//
// An Index holds every record in a compact form (about 120 bytes, UUID
// ids kept as their 16 bytes, names such as processors and error codes
// interned) and answers List, Count, Summary, FingerprintSummary and Due
// from memory. Records come in through Update: Batch.Put for a View,
// Batch.PutFields for the bytes a decoder read one into, Batch.Remove.
// Both Puts make the same entry (newEntry, generic over strings and
// bytes) and go through one path (putEntry): a record is added to every
// structure with add, and moved with unorder and order.
//
// A source that replays every record it holds (a watch from the bucket's
// start, a snapshot) does so between Batch.BeginLoad and Batch.EndLoad.
// Into an empty index the load is made in bulk: the entries are kept as
// they come, and EndLoad adds each with the same add while every ordered
// structure is in bulk mode (chunked.Set.BeginBulk), in which adding
// appends; each structure is then sorted once. So bulk and live updates
// cannot drift apart. A replacing load (a restarted watch) makes the
// index hold exactly what it loaded.
//
// AppendSnapshot writes the entries out (snapshot.go: versioned,
// checksummed, every count and string bounded when read back), and
// Batch.LoadSnapshot puts them back within a bulk load into an empty
// index, which the source then continues with the changes since.
//
// # Counts
//
// Count and Summary read counts the index keeps on every change rather
// than the records (cells.go, counts.go): per cell (status,
// recoverability, retries below the maximum and, for the records whose
// views change with time, whether the attempt has timed out and the next
// retry is due at the index's now) and per (function, error code,
// fingerprint) group, with sorted sets for the executeAt, nextRetryAt and
// retries bounds and counts per aggregate context, aggregate type and
// function kind. So a view is a set of cells, and a query costs what the
// groups and cells are, not the records. One function, countable, says
// which filters the counts answer for each query; the planner (plan.go)
// takes the lookups of an id first, then the counts, then a scan. The
// index's now only moves forward: a query for a later now first moves the
// records whose situation changed by then. A property test compares every
// answer with a scan.
//
// Every selection that depends on a record's state (the six operator
// views, Due, the summary's counts) calls the aggregate's predicates
// (aggregate.State.Schedulable, aggregate.View.Contains, ...) on the
// record, never a copy of their conditions, so the index and the commands
// always agree.
//
// Indexes that each hold a part of the records (the partitions of package
// partition) answer together through MergeList, MergeSummary and
// MergeFingerprints: a cursor is a point of the order, the same on every
// index, so each part is asked with the caller's cursor. A property test
// compares the merged answers with one index holding every record.
//
// # Concurrency
//
// An Index is safe for concurrent use: queries take a read lock, Update
// the write lock.
package index
