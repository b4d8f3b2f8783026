// Package processor is the runtime a service embeds to react to the events
// of its bounded context: it registers functions, feeds them from durable
// JetStream consumers, retries them at once, hands their final failures to
// a FailureRecorder (recorder.Recorder) and replays prepared compensations
// to exactly the function that failed. docs/processor.md is the manual:
// consumers and lanes, immediate retries, circuits, replays, Ordered
// functions and holds, range replays and builds.
//
// # Contract
//
//   - Functions are registered (Register, HandleBody, HandleState,
//     Snapshot; RegisterAggregate before the STATE_EVENT functions of its
//     type) before Run or Start; later, ErrRunning. One identity twice is
//     ErrDuplicateFunction.
//   - Each processor name has one durable consumer, DurableName(context,
//     processor). Within one instance a function gets one aggregate's
//     events in stream order and never two calls at once, those of its
//     replays, releases and range replays of that aggregate included; a
//     function waiting for a retry delays only itself, and only on that
//     aggregate.
//     Ordered functions keep that order across instances and through
//     failures (later events are held behind a recorded failure).
//   - Every event of a message goes to every function that reacts to it.
//     The message is acked once every function succeeded or had its
//     failure recorded, waived or found unrecordable; nak'ed with a delay
//     when recording failed (functions already done are not called again
//     on this instance); terminated and quarantined when it cannot be
//     decoded. Delivery is at least once: functions must be idempotent on
//     the event's identity.
//   - A replay runs only the recorded (processor, function), with
//     CompensationFrom(ctx) set, and reports the result with the attempt
//     the record fences. A replay that can never run is quarantined; one
//     that failed transiently is nak'ed with a growing delay.
//   - A function's circuit (package circuit, on by default) refuses calls
//     while open; a refused call is recorded at once with errorCode
//     CircuitOpen and its message acked.
//   - Every value read from the KV buckets (holds, progress, range
//     replays, circuits) is validated; a bad one is quarantined and fails
//     safe: it is never acted on.
//
// # Errors
//
// Register returns ErrDuplicateFunction, ErrRunning, or ErrInvalidFunction
// wrapped with the field at fault (ErrInvalidOption for an option). Run
// returns an error when it cannot start (no stream, a bucket it cannot
// open) and nil when its context ends. Holds and Replays return
// ErrHoldNotFound and ErrNotHeld for what does not exist; a replay of a
// function or event that is gone is recorded as FunctionNotFound or
// EventNotFound (ErrFunctionNotFound, ErrEventNotFound).
//
// # Concurrency and lifecycle
//
// Start runs Run in a goroutine and returns once the processor is ready,
// or Run's error if it could not start; Stop makes it stop, and Wait
// returns Run's result. Run returns after everything it started has
// stopped; Stop is idempotent; Ready and Closed report the lifecycle.
// When Run stops, queued messages and messages waiting on a retry are
// nak'ed for redelivery; running handlers get WithShutdownTimeout to
// finish. Metrics and FunctionMetrics are atomic counters, readable at any
// time. Handlers of different aggregates run concurrently and must be safe
// for that.
package processor
