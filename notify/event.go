package notify

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/tracing"
)

// The notification event types.
const (
	TypeCreated           = "created"
	TypePrepared          = "prepared"
	TypeApplied           = "applied"
	TypeSucceeded         = "succeeded"
	TypeRecoverableMarked = "recoverable_marked"
	TypeFunctionChanged   = "function_changed"
	TypeRetriesExhausted  = "retries_exhausted"
	TypeBatchCompleted    = "batch_completed"
	TypeDigest            = "digest"
	TypeTest              = "test"
)

// EventTypes are the event types rules can select. Digests go to the
// digest's endpoint, tests to the endpoint named; rules select neither.
var EventTypes = []string{TypeCreated, TypePrepared, TypeApplied, TypeSucceeded, TypeRecoverableMarked,
	TypeFunctionChanged, TypeRetriesExhausted, TypeBatchCompleted, TypeCircuitOpened, TypeCircuitProbeFailed, TypeCircuitClosed}

// typeOf maps record event names to notification types.
var typeOf = map[string]string{
	aggregate.NameExecutionFailedCreated:  TypeCreated,
	aggregate.NameCompensationPrepared:    TypePrepared,
	aggregate.NameExecutionFailedApplied:  TypeApplied,
	aggregate.NameExecutionSuccessApplied: TypeSucceeded,
	aggregate.NameRecoverableMarked:       TypeRecoverableMarked,
	aggregate.NameFunctionChanged:         TypeFunctionChanged,
}

// namespace derives notification ids.
var namespace = uuid.MustParse("5b1f0c7e-8f0a-4a53-9a8e-6f0d3c2b71a4")

// Notification is one thing to notify about.
type Notification struct {
	// ID identifies the notification: the same on every redelivery, so a
	// receiver can de-duplicate on it (Amends-Event-Id).
	ID string
	// Type is one of EventTypes, or TypeTest.
	Type string
	// Time is when it happened, in epoch ms.
	Time int64
	// Record is the record after the event (nil for batches, digests).
	Record *aggregate.State
	// Version is the record's version after the event.
	Version uint64
	// TraceID is the trace of the command that made the event.
	TraceID string
	// Batch is the result of a finished batch (TypeBatchCompleted).
	Batch *BatchSummary
	// Digest is the digest's groups (TypeDigest).
	Digest []DigestGroup
	// Circuit is the circuit transition (TypeCircuitOpened,
	// TypeCircuitProbeFailed, TypeCircuitClosed).
	Circuit *CircuitNote
}

// BatchSummary is what a batch notification says.
type BatchSummary struct {
	Command   string         `json:"command"`
	RequestID string         `json:"requestId"`
	Matched   int            `json:"matched"`
	Complete  bool           `json:"complete"`
	Counts    map[string]int `json:"counts"`
}

// Function returns the record's (or the circuit's) function, or the zero
// one.
func (n *Notification) Function() aggregate.FunctionInfo {
	if n.Circuit != nil {
		return n.Circuit.fn
	}
	if n.Record == nil {
		return aggregate.FunctionInfo{}
	}
	return n.Record.Function
}

// ErrorCode returns the record's (or the circuit's) last error code, or "".
func (n *Notification) ErrorCode() string {
	if n.Circuit != nil {
		return n.Circuit.ErrorCode
	}
	if n.Record == nil {
		return ""
	}
	return n.Record.Error.ErrorCode
}

// DedupKey is "<event type>:<function>:<record id>:<error code>", the key
// that sends one notification per dedup window; a circuit's has no record
// id, so a flapping circuit notifies once per window and kind; batches
// and digests use their id.
func (n *Notification) DedupKey() string {
	if c := n.Circuit; c != nil {
		f := c.fn
		return n.Type + ":" + f.ContextName + "/" + f.ProcessorName + "/" + f.Name + "::" + c.ErrorCode
	}
	if n.Record == nil {
		return n.Type + ":" + n.ID
	}
	f := n.Record.Function
	return n.Type + ":" + f.ContextName + "/" + f.ProcessorName + "/" + f.Name + ":" + n.Record.ID + ":" + n.Record.Error.ErrorCode
}

// exhausted reports whether a record leaves no automatic retry: FAILED,
// and either not auto-retried or out of retries.
func exhausted(s *aggregate.State) bool {
	return s.Status == aggregate.StatusFailed && !(s.Recoverable.AutoRetried() && s.IsBelowRetryThreshold())
}

// fromStream returns the notifications of one stored record stream, given
// the record's state after it.
func fromStream(st *eventstore.Stream, state *aggregate.State) []Notification {
	var out []Notification
	add := func(typ string, i int) {
		out = append(out, Notification{
			ID:   uuid.NewSHA1(namespace, []byte(st.ID+"\x00"+strconv.Itoa(i)+"\x00"+typ)).String(),
			Type: typ, Time: st.CreateTime, Record: state, Version: st.Version, TraceID: tracing.StreamTraceID(st),
		})
	}
	failed := false
	for i, e := range st.Events {
		typ, ok := typeOf[e.Name]
		if !ok {
			continue
		}
		add(typ, i)
		failed = failed || typ == TypeCreated || typ == TypeApplied
	}
	if failed && exhausted(state) {
		add(TypeRetriesExhausted, len(st.Events))
	}
	return out
}
