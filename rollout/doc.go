// Package rollout is the engine that prepares records in batches and
// judges each batch by what became of its records before it prepares the
// next: a canary, then steps. Two policies drive it: Stepped, the deploy
// release's (fixed step sizes; a step below the threshold halts it), and
// Adaptive, the recovery drain's (steps double while they succeed, halve
// when they do not, paced by a rate; a canary below the threshold waits
// and tries again).
//
// The engine is pure: Progress is a value, its methods return the next
// one, and the owner (package scheduler) reads the records, prepares them
// and stores the Progress. One stored shape, one validation (Check) and
// one set of rules serve both rollouts.
//
// Progress values are not safe for concurrent mutation; the methods never
// change their receiver.
package rollout
