package aggregate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The JSON shapes are Wow's: camelCase fields, enums by name (read
// case-insensitively), epoch-millisecond times, retry spec in seconds.
// testdata/wire pins every shape.

// MarshalJSON writes the state with Wow's derived fields isBelowRetryThreshold
// and isRetryable.
func (s State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal(struct {
		plain
		IsBelowRetryThreshold bool `json:"isBelowRetryThreshold"`
		IsRetryable           bool `json:"isRetryable"`
	}{plain(s), s.IsBelowRetryThreshold(), s.IsRetryable()})
}

// plainState is State without its JSON methods.
type plainState State

// stateWire is how a state is read: recoverable apart, so that a record
// whose document lacks it reads as UNKNOWN.
type stateWire struct {
	plainState
	Recoverable *string `json:"recoverable"`
}

func (w *stateWire) state() (State, error) {
	s := State(w.plainState)
	switch {
	case w.Recoverable != nil && *w.Recoverable != "":
		r, err := ParseRecoverability(*w.Recoverable)
		if err != nil {
			return State{}, err
		}
		s.Recoverable = r
	case s.Exists():
		// Wow's state starts UNKNOWN; snapshots and streams written before
		// Wow had the field lack it.
		s.Recoverable = RecoverabilityUnknown
	}
	return s, nil
}

// UnmarshalJSON reads a state in Wow's shape (the derived fields are
// ignored). A record (status set) whose recoverable is absent, null or ""
// reads as UNKNOWN, the value Wow's state starts with. A value of the wrong
// type or an unknown enum value is an ErrIllegalArgument naming the field
// (see ErrorField), without Go types.
func (s *State) UnmarshalJSON(b []byte) error {
	var w stateWire
	if err := json.Unmarshal(b, &w); err != nil {
		return stateDecodeError(err)
	}
	st, err := w.state()
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// UnmarshalJSONFrom is UnmarshalJSON for json/v2, which the Service and
// the event store decode with. (json/v2 wraps a method's error with the Go
// type; ErrorField and errors.Is still see through it.)
func (s *State) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w stateWire
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return v2DecodeError("state", err)
	}
	st, err := w.state()
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// errorWire is ErrorDetails in Wow's shape, with its derived field
// succeeded.
type errorWire struct {
	plainError
	Succeeded bool `json:"succeeded"`
}

// plainError is ErrorDetails without its JSON methods.
type plainError ErrorDetails

// MarshalJSON writes the details with Wow's derived field succeeded.
func (e ErrorDetails) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorWire{plainError(e), e.Succeeded()})
}

// MarshalJSONTo writes what MarshalJSON writes, for the JSON v2 encoder
// of encodeWire, straight into its output: encoding/json scans what a
// MarshalJSON method returns once more, and the details (with their stack
// trace) are in every state and in most events.
func (e ErrorDetails) MarshalJSONTo(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, errorWire{plainError(e), e.Succeeded()})
}

// encodeWire writes v as encoding/json's Marshal does (the JSON v2
// encoder with v1's options), about twice as fast for a record's events
// and state, whose error details it writes without a second scan
// (MarshalJSONTo). The bytes are Marshal's but for a string's invalid
// UTF-8: both write the replacement character, Marshal escaped
// ("\ufffd"), encodeWire not; the store's canonical form
// (eventstore.Encode) is the same for both.
func encodeWire(v any) ([]byte, error) {
	return jsonv2.Marshal(v, jsonv1.DefaultOptionsV1())
}

// EncodeEvent returns an event's name and JSON body.
func EncodeEvent(e Event) (string, []byte, error) {
	if e == nil {
		return "", nil, illegalArgument("event must not be nil.")
	}
	body, err := encodeWire(e)
	return e.EventName(), body, err
}

// DecodeEvent reads an event from its name and JSON body. An unknown name
// or a malformed body is an ErrIllegalArgument naming the problem. The
// recoverable of an ExecutionFailedCreated or ExecutionFailedApplied body
// without one (absent or null) is UNKNOWN, Wow's default.
func DecodeEvent(name string, body []byte) (Event, error) {
	var (
		e   Event
		err error
	)
	switch name {
	case NameExecutionFailedCreated:
		e, err = decodeAs[ExecutionFailedCreated](body)
	case NameCompensationPrepared:
		e, err = decodeAs[CompensationPrepared](body)
	case NameExecutionFailedApplied:
		e, err = decodeAs[ExecutionFailedApplied](body)
	case NameExecutionSuccessApplied:
		e, err = decodeAs[ExecutionSuccessApplied](body)
	case NameRetrySpecApplied:
		e, err = decodeAs[RetrySpecApplied](body)
	case NameFunctionChanged:
		e, err = decodeAs[FunctionChanged](body)
	case NameRecoverableMarked:
		e, err = decodeAs[RecoverableMarked](body)
	default:
		return nil, illegalArgument(fmt.Sprintf("unknown ExecutionFailed event %q; known events are %v.", name, EventNames))
	}
	if err != nil {
		return nil, v2DecodeError("event "+name+" has a malformed body", err)
	}
	// Streams written before Wow had recoverable lack it; Wow's default is
	// UNKNOWN.
	switch ev := e.(type) {
	case ExecutionFailedCreated:
		ev.Recoverable = orUnknown(ev.Recoverable)
		e = ev
	case ExecutionFailedApplied:
		ev.Recoverable = orUnknown(ev.Recoverable)
		e = ev
	}
	return e, nil
}

// decodeAs decodes an event body with the json/v2 prototype, as the
// event store decodes its envelope: events are decoded on every projection
// and replay. Field names match exactly, as Jackson's do; enums are read
// case-insensitively through their UnmarshalText.
func decodeAs[T any](body []byte) (T, error) {
	var v T
	err := jsonv2.Unmarshal(body, &v)
	return v, err
}

// decodeCommandBody decodes a command body with encoding/json, which
// matches field names case-insensitively: commands come from clients.
func decodeCommandBody[T any](body []byte) (T, error) {
	var v T
	err := json.Unmarshal(body, &v)
	return v, err
}

// requiredFields are the fields each command's body must have, as in Wow's
// OpenAPI contract.
var requiredFields = map[string][]string{
	NameCreateExecutionFailed: {"eventId", "function", "error", "executeAt"},
	NameApplyExecutionSuccess: {"executeAt"},
	NameApplyExecutionFailed:  {"error", "executeAt"},
	NameApplyRetrySpec:        {"maxRetries", "minBackoff", "executionTimeout"},
	NameChangeFunction:        {"functionKind", "contextName", "processorName", "name"},
	NameMarkRecoverable:       {"recoverable"},
}

// EncodeCommand returns a command's name and JSON body.
func EncodeCommand(c Command) (string, []byte, error) {
	if c == nil {
		return "", nil, illegalArgument("command must not be nil.")
	}
	body, err := json.Marshal(c)
	return c.CommandName(), body, err
}

// DecodeCommand reads a command from its snake_case name and JSON body, as
// the HTTP API receives them. An empty body is {}. An unknown name, a
// malformed body, a value of the wrong type or range, an unknown enum value
// or a missing required field is an *Error matching ErrIllegalArgument
// whose message names the field, the rule and the value (e.g.
// `maxRetries must be a whole number from -2147483648 to 2147483647, got number
// 2147483648.`), without Go types; ErrorField returns the field's JSON path.
func DecodeCommand(name string, body []byte) (Command, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if !slices.Contains(CommandNames, name) {
		return nil, illegalArgument(fmt.Sprintf("unknown ExecutionFailed command %q; known commands are %v.", name, CommandNames))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, illegalArgument(fmt.Sprintf("%s body must be a JSON object, got %s.", name, te.Value))
		}
		return nil, illegalArgument(fmt.Sprintf("%s body must be a JSON object: %v.", name, err))
	}
	for _, f := range requiredFields[name] {
		if v, ok := fields[f]; !ok || string(v) == "null" {
			return nil, invalidField(f, fmt.Sprintf("%s requires the field %s.", name, f))
		}
	}
	var (
		c   Command
		err error
	)
	switch name {
	case NameCreateExecutionFailed:
		c, err = decodeCommandBody[CreateExecutionFailed](body)
	case NamePrepareCompensation:
		c = PrepareCompensation{}
	case NameForcePrepareCompensation:
		c = ForcePrepareCompensation{}
	case NameApplyExecutionSuccess:
		c, err = decodeCommandBody[ApplyExecutionSuccess](body)
	case NameApplyExecutionFailed:
		c, err = decodeCommandBody[ApplyExecutionFailed](body)
	case NameApplyRetrySpec:
		c, err = decodeCommandBody[ApplyRetrySpec](body)
	case NameChangeFunction:
		c, err = decodeCommandBody[ChangeFunction](body)
	case NameMarkRecoverable:
		c, err = decodeCommandBody[MarkRecoverable](body)
	}
	if err != nil {
		return nil, decodeError(name, err)
	}
	return c, nil
}
