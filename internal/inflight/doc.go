// Package inflight is the one consumer runtime of amends: the processor's
// function and replay consumers, the projector and the notifier all take
// their messages through it.
//
// A Runtime pulls a durable JetStream consumer and hands each message to
// one of its lanes by a hash of the subject, so the messages of one
// subject (one aggregate, one record) reach their lane in the order the
// consumer delivers them. A lane runs its handler on one batch at a time.
//
// Every message the runtime holds, from its arrival until it is settled
// (Ack, Nak, Term and their variants on the Msg it hands out), keeps its
// lease: every third of AckWait each message held since the last tick
// gets InProgress, whether it is queued, running, or waiting on a timer
// after its handler returned without settling it. So nothing is
// redelivered for having waited. A message the server delivers again
// while it is still held (its lease was lost) is not handed over twice:
// the held Msg settles through the newest delivery.
//
// Memory is bounded by the consumer's MaxAckPending, the only limit an
// operator sets: the server never has more messages delivered and
// unsettled, the client buffers no more than that, and the lanes' queues
// hold only those.
//
// A handler may settle its messages later, from another goroutine, and
// may Post work to its lane to run in order with the lane's messages (a
// timer's resumption); any goroutine may post work to the lane of a
// subject (Runtime.Post), to run in order with that subject's messages,
// and learn from the lane's Stopped that it never will. When Consume stops, posted work that did not start
// is dropped, running handlers finish (they get the work context, which
// the caller cancels after its shutdown timeout), and every message still
// held, queued or waiting, is nak'ed for immediate redelivery in stream
// order, the order the server then redelivers them in.
package inflight
