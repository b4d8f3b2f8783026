// Package projection is the read model of the ExecutionFailed records:
// what operators and the scheduler ask ("what is failing, where, since
// when, what is due") answered fast over millions of records, with the
// same answer the aggregate would give.
//
// # Projector
//
// A Projector is a durable JetStream consumer over the compensation
// stream. For each command's stream it applies the aggregate's own Evolve
// to the record's stored View and writes it to a JetStream KV bucket
// (OpenViews), keyed by the record's processor and id (ViewKey; read by
// id with Views.Lookup). A stream at or below the stored version is
// skipped, so redelivery and several projectors on one consumer are
// harmless; writes are compare-and-set on the KV revision. A
// view that is missing or behind by more than one version is rebuilt from
// the state the stream carries (aggregate.Service stores the record's
// state with every stream), or from the record's history. Writes are
// pipelined: a worker writes the views of a batch of records at once and
// acknowledges each message only after the write holding its effect is
// stored.
//
// A message the projector can never project (it does not decode, the
// record's history does not load, or the view it makes is one the readers
// would refuse: every view is checked for what their decoder refuses
// before it is written) is quarantined (package quarantine) and terminated;
// other errors are retried with a growing delay and quarantined after a
// bounded number of deliveries. So the records behind a poison message
// still reach the views.
//
// # Index
//
// An Index answers List, Count, Summary, FingerprintSummary and Due from
// memory with an index.Index (package projection/index: the records in
// a compact form, the counts, the planner), and Get and History from the
// bucket and the event store. It is built from the bucket when Run
// starts, without replaying events, and kept current by watching the
// bucket, so several server instances can each keep their own. The first
// load is made in bulk (index.Batch.BeginLoad): the views are read with
// the view codec's fast reader (viewcodec.go; any other view with
// json/v2), and the index sorts every order and count once. A watch that
// ends is started again after a capped backoff, and its replay of the
// bucket leaves the index as a fresh load would; Healthy says whether the
// index is current. The watch also moves the index's now to the clock's
// once a second while nobody asks. The query types (Filter, Query,
// Summary, ...) are the index's, re-exported here.
//
// With WithSnapshots the index saves a snapshot of its records (about 80
// bytes a record, with the bucket revision it is consistent with) to a
// JetStream Object Store bucket (OpenSnapshots) every period and when Run
// ends, and starts from it: it loads the snapshot and watches the bucket
// from the next revision on, deletions included (snapshot.go). A
// missing, corrupt, other-version or stale snapshot makes it load the
// bucket in full, and is quarantined (kind snapshot) and logged.
//
// Get, GetView and History refuse an id that cannot be a record id
// (CheckID: over 256 bytes, not UTF-8, control characters) with
// ErrInvalidQuery before anything reaches NATS.
//
// With WithPartitions an Index keeps only the records of the partitions
// (package partition) its instance holds, reloads when they change (with
// snapshots, one per partition), and says which it holds in full
// (Partitions); package fanout merges the answers across instances.
//
// # Views that do not validate
//
// The views bucket is written by other programs too. A view is read
// through one rule on both decode paths (the view codec's fast reader and
// json/v2, then checkFields / checkView): stored under its record's key, a
// function with a context, processor and name, counts and times not
// negative, a version not above its sequence. A view that fails it is
// reported to the quarantine (kind kv), left out of the index's answers
// as it was (counted, Corrupt) and projected again from the record's
// history (Projector.Reproject, given to the index with WithReprojector);
// Index.Get shows such a record from its history meanwhile. The projector
// also projects again a view it finds ahead of its record's last version,
// and deletes the view of a record that has no history (the scheduler
// hands it those: see scheduler.WithReprojector). When the views bucket
// is younger than the projector's consumer progress (deleted and created
// again, by hand or by RepairViews), the projector starts its consumer
// from the first message, while running (checked every
// DefaultViewsCheck) and after a restart, so every record comes back.
// A view well formed but false (a hand edit from FAILED to SUCCEEDED) is
// found by the audit (WithAudit: a suspicious change at once, every record
// in turn), and a snapshot that is not of the revision it says by its
// check against the bucket before it is used (snapshotcheck.go).
//
// # Concurrency
//
// Projector and Index are safe for concurrent use. Each has a Run(ctx)
// that returns only after everything it started has stopped.
package projection
