// Package orders is an example service built on amends: an order
// aggregate, an inventory projector that reserves stock, a mailer whose
// mail server fails now and then, and the snapshot of each order, all run
// by one processor.Processor with a recorder.Recorder.
//
// When the mailer still fails after its immediate retries, amends records
// an ExecutionFailed record for that event and the mailer alone. Once the
// record is prepared (by the scheduler, or an operator), the processor
// replays the original event to the mailer only; the projector and the
// snapshot do not run again. Functions are idempotent on the event id, as
// every amends function must be.
//
// TestWalkthrough runs the whole story against an in-process JetStream; the
// README walks through it.
package orders
