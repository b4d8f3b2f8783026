package jsontype

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
)

func TestDescribe(t *testing.T) {
	type object struct{ A int }
	cases := []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[int32](), "a whole number from -2147483648 to 2147483647"},
		{reflect.TypeFor[int8](), "a whole number from -128 to 127"},
		{reflect.TypeFor[int64](), "a whole number from -9223372036854775808 to 9223372036854775807"},
		{reflect.TypeFor[uint64](), "a whole number from 0 to 18446744073709551615"},
		{reflect.TypeFor[uint16](), "a whole number from 0 to 65535"},
		{reflect.TypeFor[float64](), "a number"},
		{reflect.TypeFor[string](), "a string"},
		{reflect.TypeFor[**string](), "a string"},
		{reflect.TypeFor[bool](), "true or false"},
		{reflect.TypeFor[object](), "a JSON object"},
		{reflect.TypeFor[map[string]int](), "a JSON object"},
		{reflect.TypeFor[[]int](), "a JSON array"},
		{reflect.TypeFor[[2]int](), "a JSON array"},
		{reflect.TypeFor[any](), "another JSON value"},
		{nil, "another JSON value"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Describe(c.t), "type %v", c.t)
	}
}

func TestKind(t *testing.T) {
	for k, want := range map[jsontext.Kind]string{'"': "string", '0': "number", '{': "object", '[': "array", 't': "bool", 'f': "bool", 'n': "null", 0: "another JSON value"} {
		assert.Equal(t, want, Kind(k), "kind %q", k)
	}
}
