// Package partition divides the control plane's records among serve
// instances (issue #42, docs/scaling.md): which instance indexes,
// schedules and sweeps which records.
//
// A partition is a processor's records, or one part of them. Every record
// has a slot, a hash of its id into Slots values, that never changes. A
// processor too large for one instance's share is split into a power of
// two of parts, n, and part i, "<processor>/<i>/<n>", holds the slots s
// with s % n == i; a split regroups slots and never moves a record from
// one slot to another, so that a view keyed by its slot keeps its key
// through every split, and doubling n divides each part in two. An id
// names its slots whatever the plan, so that instances acting on two
// plans can tell whether their partitions overlap (Overlap).
//
// Compute places the partitions on the live instances from the records
// per processor: each part is at most a quarter of an instance's share;
// each partition stays with the instance that held it while that instance
// holds at most 1.25 times its share, the others go to the least loaded
// instance, and the most loaded then give parts to the least loaded until
// it holds three quarters of its share. So every instance holds between
// half and 1.25 times its share, a plan computed again from its own
// inputs moves nothing, and an instance that joins takes its part from
// the others. Compute is pure: where the sizes come from, and how an
// instance takes and gives up a
// partition (a lease per partition in KV), are the caller's.
package partition
