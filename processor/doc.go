// Package processor is the runtime a service embeds to react to the events
// of its bounded context: it registers functions, feeds them from durable
// JetStream consumers, retries them at once, hands their final failures to
// a FailureRecorder (recorder.Recorder) and replays prepared compensations
// to exactly the function that failed.
//
// # Functions
//
// A function has an identity, (context, processor, name) plus its kind
// (EVENT, or STATE_EVENT for functions of the aggregate's state), and says
// which aggregate types and event names it reacts to. Register it with
// Register, with HandleBody to receive a decoded body, or HandleState for
// STATE_EVENT functions, whose aggregate types need an evolve
// (RegisterAggregate). Per function: WithRetrySpec (the record's retry
// spec), WithoutCompensation, RecoverableOn / UnrecoverableOn (the record's
// classification, see package failure), ImmediateRetry. Snapshot registers
// the built-in snapshot function of an aggregate type. The same identity
// twice is ErrDuplicateFunction.
//
// # Consumers and order
//
// Each processor name has one durable consumer, DurableName(context,
// processor) = "amends_<context>_<processor>", on the context's stream,
// filtered on the aggregate types of its functions. Renaming a processor
// creates a new durable, which starts at the beginning of the stream (or
// its end with WithDeliverNew); the old one stays on the server until
// deleted. Its open records keep the old name: ChangeFunction them.
//
// Within one instance, messages are spread over WithConcurrency lanes
// (default 16) by a hash of their subject, that is by aggregate, and each
// message becomes one task per function that reacts to it. A lane runs
// one task at a time, but a task whose function waits for an immediate
// retry does not wait in the lane: it waits on a timer and resumes on its
// lane when the timer fires. Meanwhile its key, the function on that
// aggregate, is blocked: the function's tasks of the aggregate's later
// messages queue behind it, while every other function of those messages,
// and every function of other aggregates, runs at once. So on one
// instance:
//
//   - each function gets one aggregate's events in the order the consumer
//     delivers them, which is stream (version) order, and never two at
//     once; a function waiting for a retry of an event of aggregate A
//     delays only itself, and only on A;
//   - except around a redelivery: a message nak'ed because the recording
//     of one of its functions' failures failed, or left unsettled by a
//     processor that stopped (its messages are nak'ed in stream order, but
//     the server hands redeliveries out in no promised order: one it could
//     not deliver to the stopped instance's last pull goes behind the
//     others), is delivered again after later messages of its aggregate
//     may have reached the functions that had not run it.
//
// Across several instances sharing a durable (scale-out), JetStream hands
// each pull its own messages, so two events of one aggregate can be handled
// at once on two instances, in either order. Functions must tolerate that
// (they must be idempotent anyway), or run one instance, or use
// WithPinnedClient: JetStream's pinned-client priority policy delivers to
// one instance at a time and fails over to another when it stops pulling
// (after AckWait), which restores the single-instance guarantees above at
// the price of scale-out. Ordered functions keep their order across
// instances too (see below).
//
// A call that runs long (not a wait for a retry) does hold its lane: the
// aggregates hashed to that lane wait for it, the other lanes go on.
//
// Every message an instance holds keeps its lease until it is settled:
// queued behind a busy lane, running, or waiting on its functions'
// retries, it gets InProgress every third of AckWait (WithAckWait, default
// 30 s), so nothing is redelivered for having waited. The consumers run on
// the runtime the projector and the notifier use (internal/inflight).
// MaxAckPending (WithMaxAckPending, default 1024) bounds the messages in
// flight on all instances together, and with them the memory an instance
// uses: it buffers and holds no more.
//
// # Immediate retries
//
// An EVENT function whose error is RECOVERABLE by the global classification
// (failure.Classify without the function's rules, as the reference's retry
// filter) is called again: by default 3 times, after 2 s, 4 s and 8 s, each
// ±50 % jitter (DefaultRetry; WithImmediateRetry, ImmediateRetry).
// STATE_EVENT functions are never retried at once: their first failure is
// recorded. The waits go through an injectable Sleeper (WithSleeper). A
// replay runs the function with the same immediate retries. Only an error
// marked failure.Recoverable (or otherwise RECOVERABLE by the global
// classification, such as a timeout) is retried: RecoverableOn and
// UnrecoverableOn classify the function's record, they do not trigger
// immediate retries. Each retry is logged at Debug, a final failure that
// was recorded at Info, one that could not be recorded at Warn.
//
// Messages waiting on retries hold their place in MaxAckPending. So that
// they never fill it, which would stop the server delivering the other
// functions' messages, a failure is recorded at once, without its
// immediate retries, while the consumer holds three quarters of
// MaxAckPending or more (FunctionMetrics.RetriesShed; a Warn line at most
// every 30 s): its record, which the scheduler prepares and replays, is
// then the durable form of the retry.
//
// # Circuits
//
// Every function has a circuit (package circuit), on by default with
// circuit.DefaultPolicy: after 20 failed calls in a row, or half of at
// least 20 calls in 30 s (immediate retries and replays included; only
// failures the function's classification calls RECOVERABLE or UNKNOWN
// count), the function is not called any more. A call its circuit refuses,
// live, retried, replayed or released, is not made: its error is a
// *circuit.OpenError, final, recorded at once (errorCode CircuitOpen, the
// last real failure's message, fingerprint and classification, the
// function's retry spec) as any final failure, so an Ordered function
// holds the aggregate's later events as after any failure, and the
// message is acked as usual; FunctionMetrics.Refused counts them. A
// failure that opens the circuit is recorded without its remaining
// immediate retries, and a retry that wakes to an open circuit is refused.
// After the cool-down (10 s at first, doubling after each failed probe up
// to 30 s, with a random cut of up to 20 %), the next call, live or
// replay, is the probe (FunctionMetrics.Probes), one at a time across the
// instances; 3 that succeed in a row close the circuit. The scheduler
// then drains the records the outage left (scheduler.WithDrains).
//
// The circuits are shared by the processor's instances in a KV bucket
// (circuit.DefaultBucket, or WithCircuitStore), with compare-and-set;
// Run opens it and watches the context's circuits, so an instance learns
// at once of what another one, or an operator (amends circuits open|close),
// changed. Each instance counts its own calls. WithCircuit sets a
// function's Policy (circuit.Policy{Off: true}: always called),
// WithCircuitPolicy the processor's; Circuit tells a function's circuit as
// this instance sees it.
//
// # Acknowledgement contract
//
// Every event of a message goes to every function that reacts to it; a
// failing function does not keep the others from running. Once all have
// finished, the message is:
//
//   - acked when every function succeeded, or each failure was recorded
//     (RECORDED, ALREADY_RECORDED), waived (WithoutCompensation:
//     FAILURE_WAIVED) or cannot be recorded (no recorder or no identity:
//     FAILURE_UNRECORDED);
//   - nak'ed with a delay (WithNakDelay, default 5 s) when recording a
//     failure failed (RECORDING_FAILED): it is redelivered, and the
//     functions that already succeeded or had their failure recorded on it
//     are not called again on this instance (FunctionMetrics.Skipped): the
//     instance remembers, per stream sequence, which functions are done,
//     until the message is acked; it also remembers the sequences of the
//     last messages it acked, so that a message redelivered because its ack
//     was lost is acked again without running anything. Both memories are
//     bounded by MaxAckPending and belong to the Processor: another
//     instance, or this one after a restart of its process, runs every
//     function of a redelivered message again. Delivery is at least once,
//     and functions must be idempotent on the event's identity;
//   - terminated when it cannot be decoded: it is logged with its stream and
//     sequence, counted (Metrics.Undecodable), recorded in the quarantine
//     (WithQuarantine) with the consumer's name, and never blocks the
//     consumer.
//
// When Run stops, messages not yet started, and messages waiting on an
// immediate retry, are nak'ed for immediate redelivery elsewhere; running
// handlers get WithShutdownTimeout to finish, then their context is
// cancelled and their message nak'ed, unrecorded.
//
// # Replays
//
// With a recorder, each Processor also runs ReplayDurableName(context) on
// the compensation stream (created at its end). For each
// CompensationPrepared whose function belongs to this context it loads the
// original stream (by the recorded sequence with one direct get, checking
// the event id; else by aggregate and version), runs only the recorded
// (processor, name) with CompensationFrom(ctx) set to the record id and
// attempt (STATE_EVENT functions get the state as of that version, rebuilt
// from the history), and reports the result through the recorder with the
// attempt, which the record fences. A function no longer registered is
// reported as failed with code FunctionNotFound, UNRECOVERABLE; a missing
// event with EventNotFound. With WithRecords the record is read first and a
// prepared attempt that is no longer current is skipped.
//
// A replay's immediate retries wait on a timer as a live call's do, its
// key being the function on the record; a release's (Ordered functions)
// and a range replay's wait in their own goroutine.
//
// Replays have the same ack contract, except that no replay message is
// retried forever. One that can never be replayed (it or its prepare does
// not decode, its record's history is corrupt) is quarantined: recorded in
// a quarantine.Quarantine (WithQuarantine; by default one on the
// processor's JetStream, stream quarantine.DefaultStream) with its stream,
// sequence, subject, consumer and reason, counted, logged at most once per
// interval, and terminated. One that failed with an error that may be
// transient (the record or the event could not be read, the result could
// not be recorded) is nak'ed with a delay growing with its deliveries and
// quarantined once they are exhausted (WithReplayRetry); its record stays
// PREPARED, times out and is prepared again. So replays behind poison
// messages still run.
//
// # Ordered functions and holds
//
// A function registered with Ordered keeps its order per aggregate through
// failures (off by default: without it, a replay lands after the events
// that followed, as in the reference). Once a final failure of the
// function on version v of aggregate A is recorded, the function is not
// called for A's later events: they are held, acked, and kept as
// references (event id, version, sequence; never copies) in the KV bucket
// HoldBucket under HoldKey, with the head record's id. The other
// functions of those events, and other aggregates, run as usual.
//
// When the head record becomes SUCCEEDED, which the replay consumer sees
// as its ExecutionSuccessApplied (after a successful replay, or an
// operator's Holds.Release, which marks the head resolved in its own
// history with actor and reason), the hold is set releasing and an
// instance claims it (a claim in the hold, renewed every third of
// AckWait, taken over once it expires) and gives the held events to the
// function in version order, each read from the store and run as a replay
// whose CompensationFrom has Release set. One that fails is recorded and
// becomes the new head; the rest stay held. Events arriving meanwhile are
// held behind. Holds.Skip drops one held event (kept on the hold with
// actor and reason).
//
// Order holds whatever order messages come in: each Ordered function has
// a progress per aggregate (ProgressBucket, the last version dispatched,
// written with CAS once the function finished on the message, before the
// message's ack).
// A version runs only right after the one before it: an earlier one is
// done (a redelivery), a later one is nak'ed until the one before it is
// dispatched (a message redelivered after a kill -9, or handled by
// another instance); the message's other functions run meanwhile and are
// not run again when it comes back. So with several instances on one
// durable, a function never runs on A's events out of order, nor past a
// hold another instance created (the progress records that a hold was
// there). The cost is a KV read and a CAS write per message of an Ordered
// function (bench dispatch-ordered); functions without the option pay
// nothing. Delivery stays at least once: a crash after the function ran
// and before the progress write runs it again on that version.
//
// Holds and progress are read through one validating decoder each
// (DecodeHold, the progress's "<version>[h]"), and so are range replays,
// snapshots and build entries: a value written by something else is never
// acted on. It is quarantined (kind kv) and fails safe. A progress that
// does not read, is ahead of its aggregate's last version, is behind a
// version the consumer acked, or was deleted, is written again from the
// consumer when it can tell (a first delivery after an acked previous
// version runs); otherwise the version is held in a recovered hold that
// names the progress, for an operator (recoverProgress). A hold whose
// head record does not exist becomes such a hold after a grace
// (checkHeads). A hold that becomes invalid or is deleted while it still
// held events is written back from the last value this instance saw; one
// met invalid at start-up, with no value seen before, is replaced by a
// recovered hold (Hold.Recovered, no head record) that holds the
// aggregate's next events until an operator releases it. A claim that ends
// more than a day ahead is no claim. A release takes up to 64 held events
// per claim and removes them from the hold in one write.
//
// Range replays (WithRangeReplays, ReplayRequest) give committed events
// again to one function at an operator's request: see Replays.
//
// # Builds
//
// With WithBuildRegistry, Run registers the build each of its processors
// runs (module version and VCS revision from the binary's build info, or
// the one given) in a KV registry, renewing the entry while it runs and
// removing it when it stops. The scheduler releases records held until a
// deploy when a processor registers a new build.
//
// # Concurrency and lifecycle
//
// Register functions, and RegisterAggregate before the STATE_EVENT
// functions and snapshots of its type, before Run or Start: a registration
// after it returns ErrRunning. Start runs Run in a goroutine and returns
// once the processor is ready, or Run's error if it could not start; Stop
// makes it stop, and Wait returns Run's result. Run returns after
// everything it started has stopped; Stop is idempotent; Ready and Closed
// report the lifecycle. Run logs when it begins to stop and when the
// shutdown timeout cancels handlers still running, and warns at start when
// functions are registered without a recorder.
// Metrics and FunctionMetrics are atomic counters, readable at any time.
// Handlers of different aggregates run concurrently and must be safe for
// that.
package processor
