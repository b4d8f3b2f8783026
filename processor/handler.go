package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
)

// Handler is a function's code. It returns nil when the event is handled.
// An error is retried at once if RECOVERABLE (EVENT functions only), then
// recorded. A Handler must be idempotent on the event's identity (event
// id, aggregate, version): delivery is at least once and replays run it
// again. Handlers of different aggregates run concurrently.
type Handler func(ctx context.Context, d *Delivery) error

// Delivery is one event delivered to one function.
type Delivery struct {
	// Stream is the stored stream (one command's events) holding Event; its
	// Seq is the stream sequence. Treat it as read-only.
	Stream *eventstore.Stream
	// Event is the event being delivered, Stream.Events[Index].
	Event *eventstore.Event
	// Index is Event's position in Stream.Events.
	Index int
	// State is, for STATE_EVENT functions, the aggregate's state after
	// Stream, built with the evolve registered for its type; nil for EVENT
	// functions. Treat it as read-only.
	State any
	// Function is the identity of the function receiving the delivery.
	Function aggregate.FunctionInfo

	call trace.SpanContext // the span of the last call on it (trace.go)
	// record is the record a replay runs for; prior is its last failure
	// when that was a real one, not a refusal by the circuit (nil
	// otherwise, or when the record was not read): the replay's failure is
	// then no news about the dependency (circuit.Call.Known).
	record string
	prior  *PriorFailure
	// class is the last call's failure classified by the function's rules,
	// once (classified), for the circuit and the record.
	class aggregate.Recoverability
	// started is when the attempt's first call was made (immediate
	// retries belong to the attempt); at is when its last call was.
	started, at time.Time
	// The call's state, for the steps around it (steps.go): n is the
	// call's number in the attempt (0 the first), again that an immediate
	// retry follows, unjudged that the call could not be made (the
	// circuit learns nothing from it); cacheState lets a STATE_EVENT
	// function's state come from the state cache (live deliveries).
	n                           int
	again, unjudged, cacheState bool
}

// EventRef is the delivered event as a record names it: its id (d.Event.ID),
// its aggregate and its version.
func (d *Delivery) EventRef() aggregate.EventID { return eventIDOf(d.Stream, d.Event) }

// EventID is EventRef.
//
// Deprecated: use EventRef, or d.Event.ID for the id alone. It goes in the
// next release.
func (d *Delivery) EventID() aggregate.EventID { return d.EventRef() }

func eventIDOf(s *eventstore.Stream, e *eventstore.Event) aggregate.EventID {
	return aggregate.EventID{
		ID: e.ID,
		AggregateID: aggregate.WireAggregateID{
			ContextName:   s.Aggregate.Context,
			AggregateName: s.Aggregate.Type,
			AggregateID:   s.Aggregate.ID,
			TenantID:      aggregate.DefaultTenantID,
		},
		Version: s.Version,
		Seq:     s.Seq,
	}
}

// HandleBody adapts a function of the decoded event body to a Handler: it
// decodes Event.Body as JSON into a T. A body that does not decode is an
// error with code "BadEvent", marked UNRECOVERABLE.
func HandleBody[T any](fn func(ctx context.Context, d *Delivery, body T) error) Handler {
	return func(ctx context.Context, d *Delivery) error {
		var body T
		if err := json.Unmarshal(d.Event.Body, &body); err != nil {
			return failure.Unrecoverable(&codedError{code: "BadEvent",
				msg: fmt.Sprintf("event %s (%s) of %s version %d: decode body as %T: %v", d.Event.ID, d.Event.Name, d.Stream.Aggregate, d.Stream.Version, body, err)})
		}
		return fn(ctx, d, body)
	}
}

// HandleState adapts a function of the aggregate state to a Handler, for
// STATE_EVENT functions. A state of another type than S is an error with
// code "BadState", marked UNRECOVERABLE (the evolve registered for the
// aggregate type returns another type).
func HandleState[S any](fn func(ctx context.Context, d *Delivery, state S) error) Handler {
	return func(ctx context.Context, d *Delivery) error {
		s, ok := d.State.(S)
		if !ok {
			var want S
			return failure.Unrecoverable(&codedError{code: "BadState",
				msg: fmt.Sprintf("%s: state of %s is %T, not %T; register the evolve of %s with that state type", d.Function.Name, d.Stream.Aggregate, d.State, want, d.Stream.Aggregate.Type)})
		}
		return fn(ctx, d, s)
	}
}
