package projection

import (
	"fmt"
	"strconv"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/jsonlex"
)

// appendState appends the JSON of s to b: the bytes State's MarshalJSON
// (encoding/json) writes, by the view's codec instead of by reflection,
// which is on every view written. TestAppendStateWritesWhatMarshalJSONWrites
// and FuzzAppendState compare them. It fails only where MarshalJSON
// fails: a jitter that is NaN or infinite.
func appendState(b []byte, s *aggregate.State) ([]byte, error) {
	c := codec{writing: true, out: b, f: &viewFields{}}
	c.state(s)
	return c.out, c.err
}

// appendView returns the stored JSON of v, unchecked: the bytes of
// json.Marshal(v).
func appendView(v *api.View) ([]byte, error) {
	e := &v.State.Error
	// A view with short ids and names is about 700 bytes.
	b := make([]byte, 0, 768+len(e.ErrorMsg)+len(e.StackTrace)+len(e.Fingerprint)+64*len(e.BindingErrors))
	c := codec{writing: true, out: b, f: &viewFields{}}
	c.view(v)
	if c.err != nil {
		return nil, fmt.Errorf("encode view: %v: %w", c.err, ErrCorruptView)
	}
	return c.out, nil
}

// viewFields is a stored view as the codec reads it, without decoding
// the whole view: what the index keeps as bytes, the rest as it is
// written, unescaped only by view.
//
// The byte slices alias the input of decodeViewFields, or, for a string
// the JSON writes with escape sequences, the scratch buffer inside the
// viewFields; either way they are valid only until the input is changed
// or the viewFields is passed to decodeViewFields again. Copy (or intern)
// what must be kept. Each slice's capacity is its length, so appending to
// one never overwrites its neighbours. The enums (fnKind, status,
// recoverable) are the canonical names, e.g. "FAILED"; fingerprint is nil
// when the view has none.
type viewFields struct {
	id          []byte // State.ID
	eventID     []byte // State.EventID.ID
	aggregateID []byte // State.EventID.AggregateID.AggregateID
	aggContext  []byte // State.EventID.AggregateID.ContextName
	aggName     []byte // State.EventID.AggregateID.AggregateName
	fnKind      []byte // State.Function.FunctionKind
	fnContext   []byte // State.Function.ContextName
	fnProcessor []byte // State.Function.ProcessorName
	fnName      []byte // State.Function.Name
	errorCode   []byte // State.Error.ErrorCode
	errorMsg    []byte // State.Error.ErrorMsg
	fingerprint []byte // State.Error.Fingerprint
	status      []byte // State.Status
	recoverable []byte // State.Recoverable
	executeAt   int64  // State.ExecuteAt
	timeoutAt   int64  // State.RetryState.TimeoutAt
	nextRetryAt int64  // State.RetryState.NextRetryAt
	retries     int32  // State.RetryState.Retries
	maxRetries  int32  // State.RetrySpec.MaxRetries
	version     uint64 // Version
	seq         uint64 // Seq

	// What only view reads.
	tenantID                     jsonlex.Text // State.EventID.AggregateID.TenantID
	eventVersion, eventSeq       uint64       // State.EventID.Version, Seq
	stackTrace                   jsonlex.Text // State.Error.StackTrace
	hasBindingErrors             bool         // State.Error.BindingErrors is there, maybe empty
	bindingErrors                []bindingErrorText
	minBackoff, executionTimeout int32  // State.RetrySpec
	maxBackoff                   int32  // State.RetrySpec
	jitter                       []byte // State.RetrySpec.Jitter as written, nil if absent
	retryAt                      int64  // State.RetryState.RetryAt
	preparedVersion              uint64 // State.PreparedVersion
	updatedAt                    int64  // UpdatedAt

	buf []byte // unescaped strings; reused by the next call
}

type bindingErrorText struct{ name, msg jsonlex.Text }

// decodeViewFields reads a stored view in the one shape encodeView writes
// (the codec's layout): compact JSON, the members in their order, each
// optional member (eventId.seq, error.bindingErrors, error.fingerprint,
// retrySpec.maxBackoff, retrySpec.jitter, state.preparedVersion) present
// or absent. It is a single pass over data and allocates nothing once
// out's scratch buffer has grown to the longest escaped strings it meets.
//
// The contract: whenever ok is true, decodeView(data) succeeds and every
// field of out equals the corresponding field of the View it returns (and
// out.view() is that View). So ok is false for every input decodeView
// refuses (invalid JSON or UTF-8, a duplicate or missing member, trailing
// data, a number out of its field's range, an enum that is not one of its
// values, an empty record id, version 0), and also for anything else the
// scanner is not sure of: whitespace, members in another order, unknown
// members, null, enums not in their canonical case, lone surrogate
// escapes. On false out holds garbage and the caller decodes with
// decodeView, which then names the problem or reads a view the fast path
// does not know.
//
// Not safe for concurrent use with the same out.
func decodeViewFields(data []byte, out *viewFields) (ok bool) {
	// Every field but the optional ones is set on success.
	*out = viewFields{buf: out.buf[:0], bindingErrors: out.bindingErrors[:0]}
	c := codec{in: jsonlex.NewScanner(data), f: out, ok: true}
	c.view(&api.View{})
	return c.ok && c.in.Done() && len(out.id) > 0 && out.version != 0 &&
		isFunctionKind(out.fnKind) && isStatus(out.status) && isRecoverability(out.recoverable)
}

// The enums as decodeView reads them are their canonical names; the fast
// path accepts only those, not the other cases decodeView also reads.
func isFunctionKind(b []byte) bool {
	switch string(b) {
	case "COMMAND", "SOURCING", "EVENT", "STATE_EVENT", "ERROR":
		return true
	}
	return false
}

func isStatus(b []byte) bool {
	switch string(b) {
	case "FAILED", "PREPARED", "SUCCEEDED":
		return true
	}
	return false
}

func isRecoverability(b []byte) bool {
	switch string(b) {
	case "RECOVERABLE", "UNRECOVERABLE", "UNKNOWN":
		return true
	}
	return false
}

// view returns the View f was read from (decodeViewFields returned true).
func (f *viewFields) view() api.View {
	s := aggregate.State{
		ID: string(f.id),
		EventID: aggregate.EventID{ID: string(f.eventID), Version: f.eventVersion, Seq: f.eventSeq,
			AggregateID: aggregate.WireAggregateID{ContextName: string(f.aggContext), AggregateName: string(f.aggName),
				AggregateID: string(f.aggregateID), TenantID: f.tenantID.String()}},
		Function: aggregate.FunctionInfo{FunctionKind: aggregate.FunctionKind(f.fnKind), ContextName: string(f.fnContext),
			ProcessorName: string(f.fnProcessor), Name: string(f.fnName)},
		Error: aggregate.ErrorDetails{ErrorCode: string(f.errorCode), ErrorMsg: string(f.errorMsg),
			StackTrace: f.stackTrace.String(), Fingerprint: string(f.fingerprint)},
		ExecuteAt: f.executeAt,
		RetrySpec: aggregate.RetrySpec{MaxRetries: f.maxRetries, MinBackoff: f.minBackoff, ExecutionTimeout: f.executionTimeout,
			MaxBackoff: f.maxBackoff},
		RetryState:      aggregate.RetryState{Retries: f.retries, RetryAt: f.retryAt, TimeoutAt: f.timeoutAt, NextRetryAt: f.nextRetryAt},
		Status:          aggregate.Status(f.status),
		Recoverable:     aggregate.Recoverability(f.recoverable),
		PreparedVersion: f.preparedVersion,
	}
	if f.jitter != nil {
		s.RetrySpec.Jitter, _ = strconv.ParseFloat(string(f.jitter), 64) // Float took it: in range
	}
	if f.hasBindingErrors {
		s.Error.BindingErrors = make([]aggregate.BindingError, len(f.bindingErrors))
		for i, be := range f.bindingErrors {
			s.Error.BindingErrors[i] = aggregate.BindingError{Name: be.name.String(), Msg: be.msg.String()}
		}
	}
	return api.View{State: s, Version: f.version, UpdatedAt: f.updatedAt, Seq: f.seq}
}
