package aggregate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
// reads as UNKNOWN, the value Wow's state starts with; an unknown value is
// an ErrIllegalArgument naming the field.
func (s *State) UnmarshalJSON(b []byte) error {
	var w stateWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	st, err := w.state()
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// UnmarshalJSONFrom is UnmarshalJSON for json/v2, which the Service and
// the event store decode with.
func (s *State) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w stateWire
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	st, err := w.state()
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// MarshalJSON writes the details with Wow's derived field succeeded.
func (e ErrorDetails) MarshalJSON() ([]byte, error) {
	type plain ErrorDetails
	return json.Marshal(struct {
		plain
		Succeeded bool `json:"succeeded"`
	}{plain(e), e.Succeeded()})
}

// EncodeEvent returns an event's name and JSON body.
func EncodeEvent(e Event) (string, []byte, error) {
	if e == nil {
		return "", nil, illegalArgument("event must not be nil.")
	}
	body, err := json.Marshal(e)
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
		return nil, eventDecodeError(name, err)
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

// eventDecodeError turns a json/v2 error of event name's body into an
// ErrIllegalArgument that names the field and the rule, without Go types.
func eventDecodeError(name string, err error) error {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) {
			return illegalArgument(fmt.Sprintf("event %s has a malformed body: not valid JSON at offset %d.", name, syn.ByteOffset))
		}
		return illegalArgument(fmt.Sprintf("event %s has a malformed body.", name))
	}
	var path []string
	for tok := range se.JSONPointer.Tokens() {
		path = append(path, tok)
	}
	field := strings.Join(path, ".")
	var e *Error
	if errors.As(se.Err, &e) {
		// An enum's error: it names the values.
		return invalidField(field, fmt.Sprintf("event %s has a malformed body: %s", name, strings.Replace(e.Message, e.Field, field, 1)))
	}
	got := kindName(se.JSONKind)
	if se.JSONKind == '0' && len(se.JSONValue) > 0 {
		got += " " + string(se.JSONValue)
	}
	if field == "" || se.GoType == nil {
		return illegalArgument(fmt.Sprintf("event %s has a malformed body: it must be a JSON object, got %s.", name, got))
	}
	return invalidField(field, fmt.Sprintf("event %s has a malformed body: %s must be %s, got %s.", name, field, describeType(se.GoType), got))
}

// kindName names a JSON kind as encoding/json's errors do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	default:
		return "another JSON value"
	}
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
// `maxRetries must be an integer from -2147483648 to 2147483647, got number
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

// enumPrefixes are the paths of enums nested in a command's body: an
// enum's own error knows only its field name.
var enumPrefixes = map[string]map[string]string{
	NameCreateExecutionFailed: {"functionKind": "function."},
}

// decodeError turns an encoding/json error of command name's body into an
// *Error that names the field, the rule and the value.
func decodeError(name string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		// An enum's error: it names the field and the values.
		if prefix := enumPrefixes[name][e.Field]; prefix != "" {
			c := *e
			c.Field, c.Message = prefix+e.Field, prefix+e.Message
			return &c
		}
		return e
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return invalidField(te.Field, fmt.Sprintf("%s must be %s, got %s.", te.Field, describeType(te.Type), te.Value))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return illegalArgument(fmt.Sprintf("%s body is not valid JSON at offset %d: %v.", name, se.Offset, err))
	}
	return illegalArgument(fmt.Sprintf("%s body is not valid.", name))
}

// describeType says what JSON a field of Go type t takes.
func describeType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Recoverability]():
		return oneOf(Recoverabilities)
	case reflect.TypeFor[FunctionKind]():
		return oneOf(FunctionKinds)
	case reflect.TypeFor[Status]():
		return oneOf(Statuses)
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return describeType(t.Elem())
	default:
		return "another JSON value"
	}
}
