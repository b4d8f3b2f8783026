package processor

import (
	"cmp"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
)

// Function is a function's identity and what it reacts to.
//
// Processor and Name identify it within the Processor's context: a record
// of its failure names (context, Processor, Name), and a replay runs only
// the function with that identity. Processor also names the durable
// consumer that feeds all functions of that processor, so renaming a
// processor gives it a new durable consumer, which starts from the
// beginning of the stream (or the end, with WithDeliverNew): rename with
// care, and ChangeFunction the open records of the old name.
type Function struct {
	// Processor groups functions that share one durable consumer, e.g.
	// "InventoryProjector". 1 to 64 characters of [A-Za-z0-9_-].
	Processor string
	// Name is the function's name within the processor, e.g.
	// "onOrderPlaced". Same rule.
	Name string
	// Kind is aggregate.KindEvent (the default when empty) for processors,
	// sagas and projections, or aggregate.KindStateEvent for functions that
	// receive the aggregate's state after the event's stream: they get no
	// immediate retry and are recorded on their first failure.
	Kind aggregate.FunctionKind
	// AggregateTypes are the aggregate types of the context whose events the
	// function receives; at least one.
	AggregateTypes []string
	// Events are the event names it receives; empty means every event of
	// those aggregate types.
	Events []string
}

// FunctionOption configures one registered function. The naming rule: a
// function's options read as a phrase about it (Ordered, RetrySpec,
// Circuit, ImmediateRetry, RecoverableOn, NoCompensation); the
// processor's own start with With (WithImmediateRetry, WithCircuitPolicy)
// and set the default a function's option replaces.
type FunctionOption func(*function) error

// RetrySpec sets the retry spec of the function's records (Wow's
// @Retry maxRetries/minBackoff/executionTimeout). Without it a record gets
// the compensation service's default. The spec is checked at registration.
func RetrySpec(spec aggregate.RetrySpec) FunctionOption {
	return func(f *function) error {
		if err := aggregate.ValidateRetrySpec(spec); err != nil {
			return f.invalid("retry spec: %s", reason(err))
		}
		f.retrySpec = &spec
		return nil
	}
}

// NoCompensation opts the function out of compensation (Wow's
// @Retry(enabled = false)): its failures are logged, counted and acked
// without a record (outcome FAILURE_WAIVED). A replay of an older record
// that succeeds still reports ApplyExecutionSuccess.
func NoCompensation() FunctionOption {
	return func(f *function) error { f.waived = true; return nil }
}

// WithRetrySpec is RetrySpec.
//
// Deprecated: use RetrySpec; a function's options carry no With (see
// docs/architecture.md, "Names"). It goes in the next release.
func WithRetrySpec(spec aggregate.RetrySpec) FunctionOption { return RetrySpec(spec) }

// WithoutCompensation is NoCompensation.
//
// Deprecated: use NoCompensation. It goes in the next release.
func WithoutCompensation() FunctionOption { return NoCompensation() }

// RecoverableOn classifies errors matching any of ms as RECOVERABLE in the
// function's records (see package failure for the order of rules).
func RecoverableOn(ms ...failure.Matcher) FunctionOption {
	return func(f *function) error { f.rules.Recoverable = append(f.rules.Recoverable, ms...); return nil }
}

// UnrecoverableOn classifies errors matching any of ms as UNRECOVERABLE in
// the function's records.
func UnrecoverableOn(ms ...failure.Matcher) FunctionOption {
	return func(f *function) error { f.rules.Unrecoverable = append(f.rules.Unrecoverable, ms...); return nil }
}

// ImmediateRetry replaces the processor's immediate retry policy
// (WithImmediateRetry) for this function. STATE_EVENT functions never retry
// immediately.
func ImmediateRetry(r Retry) FunctionOption {
	return func(f *function) error {
		if err := r.validate(); err != nil {
			return f.invalid("immediate retry: %s", reason(err))
		}
		f.retry = r
		return nil
	}
}

// Ordered keeps the function's order per aggregate through failures: once
// a final failure of the function on an event of aggregate A is recorded,
// the function is not called for A's later events, which are held (acked,
// and kept as references in the holds bucket, HoldBucket); the other
// functions of those events run as usual. When the head record becomes
// SUCCEEDED (its replay succeeded, or an operator released the hold), the
// held events are given to the function in version order, each as a
// replay whose CompensationFrom has Release set; one that fails becomes
// the hold's new head and the rest stay held. Events of A arriving during
// a release are held behind it.
//
// An Ordered function needs the processor's recorder and records
// (WithRecorder, WithRecords) and cannot be NoCompensation: Run
// returns ErrInvalidFunction otherwise. Off by default, which is the
// reference's behaviour: a replay runs after the events that followed.
func Ordered() FunctionOption {
	return func(f *function) error { f.ordered = true; return nil }
}

// function is a registered function.
type function struct {
	info      aggregate.FunctionInfo
	types     map[string]bool
	events    map[string]bool // nil: all
	handler   Handler
	run       Handler // handler behind its steps (steps.go), set by Register
	retrySpec *aggregate.RetrySpec
	waived    bool
	rules     failure.Rules
	retry     Retry
	ordered   bool
	stats     *FunctionMetrics
	index     int                             // its place in its group: its bit in a message's done tasks
	circuit   *circuit.Policy                 // WithCircuit; nil: the processor's
	br        atomic.Pointer[circuit.Breaker] // set by Run (circuits.go)
}

// breaker returns f's breaker, nil before Run started the circuits.
func (f *function) breaker() *circuit.Breaker { return f.br.Load() }

// reacts reports whether f receives events named name.
func (f *function) reacts(name string) bool { return f.events == nil || f.events[name] }

// newFunction checks fn and builds the registered function.
func newFunction(context string, fn Function, h Handler, def Retry, opts []FunctionOption) (*function, error) {
	fn.Kind = cmp.Or(fn.Kind, aggregate.KindEvent)
	if err := checkFunction(fn, h); err != nil {
		return nil, err
	}
	f := &function{
		info:    aggregate.FunctionInfo{FunctionKind: fn.Kind, ContextName: context, ProcessorName: fn.Processor, Name: fn.Name},
		types:   make(map[string]bool),
		handler: h,
		retry:   def,
		stats:   &FunctionMetrics{},
	}
	for _, t := range fn.AggregateTypes {
		f.types[t] = true
	}
	if len(fn.Events) > 0 {
		f.events = make(map[string]bool)
		for _, e := range fn.Events {
			f.events[e] = true
		}
	}
	for _, o := range opts {
		if err := o(f); err != nil {
			return nil, err
		}
	}
	if fn.Kind == aggregate.KindStateEvent {
		f.retry = Retry{} // recorded on the first failure
	}
	if f.ordered && f.waived {
		return nil, f.invalid("an Ordered function cannot be WithoutCompensation: its holds wait on its records")
	}
	return f, nil
}

// invalid returns an error matching ErrInvalidFunction about f.
func (f *function) invalid(format string, args ...any) error {
	return fmt.Errorf("function %s.%s: %s: %w", f.info.ProcessorName, f.info.Name, fmt.Sprintf(format, args...), ErrInvalidFunction)
}

// invalidFunction returns an error matching ErrInvalidFunction about fn.
func invalidFunction(fn Function, format string, args ...any) error {
	return fmt.Errorf("function %s.%s: %s: %w", fn.Processor, fn.Name, fmt.Sprintf(format, args...), ErrInvalidFunction)
}

// reason returns err's message without the eventstore.ErrInvalid sentinel
// and the closing period the reference's messages end with, so the
// message it goes into has one sentinel and no doubled punctuation.
func reason(err error) string {
	msg := strings.TrimSuffix(err.Error(), ": "+eventstore.ErrInvalid.Error())
	return strings.TrimSuffix(msg, ".")
}

// checkFunction checks fn's kind, names, aggregate types and events, and
// that it has a handler.
func checkFunction(fn Function, h Handler) error {
	if fn.Kind != aggregate.KindEvent && fn.Kind != aggregate.KindStateEvent {
		return invalidFunction(fn, "kind must be EVENT or STATE_EVENT, got %q", fn.Kind)
	}
	if h == nil {
		return invalidFunction(fn, "the handler is nil")
	}
	if len(fn.AggregateTypes) == 0 {
		return invalidFunction(fn, "name at least one aggregate type it reacts to")
	}
	names := []struct{ field, v string }{{"processor name", fn.Processor}, {"function name", fn.Name}}
	for _, t := range fn.AggregateTypes {
		names = append(names, struct{ field, v string }{"aggregate type", t})
	}
	for _, e := range fn.Events {
		names = append(names, struct{ field, v string }{"event name", e})
	}
	for _, c := range names {
		if err := eventstore.ValidateName(c.field, c.v); err != nil {
			return invalidFunction(fn, "%s", reason(err))
		}
	}
	return nil
}
