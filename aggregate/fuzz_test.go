package aggregate_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/amends-dev/amends/aggregate"
)

// internals are what no decode error may show a user.
var internals = []string{"Go ", "aggregate.", "jsontext", "json:", "int32", "int64", "uint64", "map["}

func checkDecodeError(t *testing.T, what string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrIllegalArgument) {
		t.Fatalf("%s: the error %v (%T) is not an IllegalArgument *Error", what, err, err)
	}
	for _, s := range internals {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("%s: the error %q shows %q", what, err, s)
		}
	}
}

// FuzzDecodeCommand: any body decodes to a command that encodes and
// decodes back to itself, or fails with an IllegalArgument that shows no
// Go internals.
func FuzzDecodeCommand(f *testing.F) {
	for name, c := range goldenCommands {
		_, body, _ := EncodeCommand(c)
		f.Add(name, body)
	}
	f.Add(NameApplyRetrySpec, []byte(`{"maxRetries":2147483648,"minBackoff":"1","executionTimeout":[]}`))
	f.Add(NameCreateExecutionFailed, []byte(`{"eventId":{"version":-1},"function":{"functionKind":7},"error":{"bindingErrors":{}},"executeAt":1.5}`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		c, err := DecodeCommand(name, body)
		if err != nil {
			checkDecodeError(t, name, err)
			return
		}
		gotName, again, err := EncodeCommand(c)
		if err != nil || gotName != name {
			t.Fatalf("%s: decoded %#v does not encode: %v", name, c, err)
		}
		back, err := DecodeCommand(name, again)
		if err != nil {
			// An absent enum decodes to "" but "" is refused; such a
			// command must be one Decide refuses too.
			state := State{ID: "rec-1"}
			if _, isCreate := c.(CreateExecutionFailed); !isCreate {
				state = given(preparedAfter(DefaultRetrySpec, 1)...)
			}
			if _, derr := Decide(state, c, at(t0)); !errors.Is(derr, ErrIllegalArgument) {
				t.Fatalf("%s: %s does not decode again (%v), yet Decide accepts it: %v", name, again, err, derr)
			}
			return
		}
		if _, again2, _ := EncodeCommand(back); string(again2) != string(again) {
			t.Fatalf("%s: not stable:\n%s\n%s", name, again, again2)
		}
	})
}

// FuzzDecodeEvent: any stored body decodes or fails with an
// IllegalArgument that shows no Go internals; Evolve never fails on it.
func FuzzDecodeEvent(f *testing.F) {
	for name, e := range goldenEvents {
		_, body, _ := EncodeEvent(e)
		f.Add(name, body)
	}
	f.Add(NameExecutionFailedApplied, []byte(`{"error":{"errorCode":5},"executeAt":"x","recoverable":"maybe"}`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		e, err := DecodeEvent(name, body)
		if err != nil {
			checkDecodeError(t, name, err)
			return
		}
		s := Evolve(given(created(DefaultRetrySpec, 0)...), e)
		if s.Recoverable == "" {
			t.Fatalf("%s: evolved to an empty recoverable", name)
		}
	})
}
