// Package jsontype says, in the words of an error message, what JSON value
// a Go type takes and what kind of value was given instead: the one
// wording that aggregate's wire errors and the server's request-body
// errors share.
package jsontype

import (
	"fmt"
	"math"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
)

// Describe says what JSON a value of Go type t takes, for an error message
// ("a whole number from 0 to 255", "a string", "a JSON object"). Pointers
// describe what they point at; a nil t is "another JSON value". Types with
// a closed set of values (enums) are the caller's to describe first.
func Describe(t reflect.Type) string {
	if t == nil {
		return "another JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("a whole number from %d to %d", int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	default:
		return "another JSON value"
	}
}

// Kind names a JSON kind as encoding/json's errors do ("string",
// "number", "object", "array", "bool", "null"), for the "got" of a
// message.
func Kind(k jsontext.Kind) string {
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
	}
	return "another JSON value"
}
