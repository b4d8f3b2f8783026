// Package failure classifies the errors of event handlers as RECOVERABLE,
// UNRECOVERABLE or UNKNOWN (aggregate.Recoverability), the way amends
// decides whether to retry a failed function at once and how to record it.
//
// Classify looks, in this order, at:
//
//  1. the function's own Rules (processor.RecoverableOn / UnrecoverableOn):
//     the nearest match in the error chain wins; a tie goes to RECOVERABLE;
//  2. the global registry (Register), nearest match first, a tie to
//     RECOVERABLE;
//  3. marks set with Recoverable and Unrecoverable (cockroachdb/errors
//     marks), the outermost mark first;
//  4. timeouts: context.DeadlineExceeded or any error in the chain with a
//     Timeout() bool method that returns true (net.Error, os.ErrDeadlineExceeded)
//     are RECOVERABLE;
//  5. otherwise UNKNOWN. Nothing is UNRECOVERABLE by default.
//
// "Nearest" is Go's analogue of the reference's class-hierarchy distance:
// the number of unwrap steps from the returned error to the node that
// matches (0 for the error itself). A matcher tests one node only: Is(target)
// matches a node equal to target or whose Is method reports target, As[T]
// a node of type T (or whose As method yields a T). Joined errors
// (Unwrap() []error) are searched breadth first.
//
// The registry is safe for concurrent use; Register is meant for start-up.
package failure
