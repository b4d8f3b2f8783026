package aggregate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/amends-dev/amends/internal/jsontype"
)

// The decoders' errors name the field (by its JSON path), the rule and the
// value, and never show Go types: encoding/json's and json/v2's errors are
// translated here.

// stateDecodeError is decodeError for a state read with encoding/json.
func stateDecodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := strings.TrimPrefix(te.Field, "plainState.")
		return invalidField(field, fmt.Sprintf("state: %s must be %s, got %s.", field, describeType(te.Type), te.Value))
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return illegalArgument(fmt.Sprintf("state: not valid JSON at offset %d.", syn.Offset))
	}
	return illegalArgument("state must be a JSON object.")
}

// v2DecodeError turns a json/v2 error into an ErrIllegalArgument that
// names the field and the rule, without Go types; what says what was
// decoded ("event x has a malformed body").
func v2DecodeError(what string, err error) error {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) {
			return illegalArgument(fmt.Sprintf("%s: not valid JSON at offset %d.", what, syn.ByteOffset))
		}
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return illegalArgument(what + ".")
	}
	var path []string
	for tok := range se.JSONPointer.Tokens() {
		path = append(path, tok)
	}
	field := strings.Join(path, ".")
	var e *Error
	if errors.As(se.Err, &e) {
		// An enum's error: it names the values.
		return invalidField(field, fmt.Sprintf("%s: %s", what, strings.Replace(e.Message, e.Field, field, 1)))
	}
	got := jsontype.Kind(se.JSONKind)
	if se.JSONKind == '0' && len(se.JSONValue) > 0 {
		got += " " + string(se.JSONValue)
	}
	if field == "" || se.GoType == nil {
		return illegalArgument(fmt.Sprintf("%s: it must be a JSON object, got %s.", what, got))
	}
	return invalidField(field, fmt.Sprintf("%s: %s must be %s, got %s.", what, field, describeType(se.GoType), got))
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

// describeType says what JSON a field of Go type t takes: one of the
// values for the enums, else internal/jsontype's words.
func describeType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[Recoverability]():
		return oneOf(Recoverabilities)
	case reflect.TypeFor[FunctionKind]():
		return oneOf(FunctionKinds)
	case reflect.TypeFor[Status]():
		return oneOf(Statuses)
	}
	return jsontype.Describe(t)
}
