package eventstore

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// encodedSizeHint is a capacity that holds s's document unless its
// strings need escapes: the field names and punctuation appendStream
// writes, the strings, the bodies and the state. A short hint costs a
// second buffer of twice the size and a copy of the first.
func encodedSizeHint(s *Stream) int {
	n := 200 + len(s.ID) + len(s.Aggregate.Context) + len(s.Aggregate.Type) + len(s.Aggregate.ID) +
		len(s.CommandID) + len(s.RequestID) + len(s.TraceID) + len(s.State)
	for i := range s.Events {
		e := &s.Events[i]
		n += 42 + len(e.ID) + len(e.Name) + len(e.Revision) + len(e.Body)
	}
	for k, v := range s.Headers {
		n += 6 + len(k) + len(v)
	}
	return n
}

// Encode returns the stored JSON document of s after validating it. The
// error matches ErrInvalid and names the field.
func Encode(s *Stream) ([]byte, error) {
	// The encoder checks the JSON syntax of bodies and state as it copies
	// them, so validate the rest first and scan the JSON only once.
	if err := s.validate(false); err != nil {
		return nil, err
	}
	data, err := appendStream(make([]byte, 0, encodedSizeHint(s)), s)
	if err != nil {
		if verr := s.Validate(); verr != nil {
			return nil, verr // names the event or the state
		}
		return nil, invalid("encode stream %s: %v", describe(s.ID), err)
	}
	return data, nil
}

// Decode parses a stored JSON document into a Stream and validates it. The
// returned stream's Seq is 0; the store sets it. The error matches
// ErrInvalid and says what is wrong with the document.
//
// Decoding is on every read path, so it uses the Go team's encoding/json/v2
// prototype (github.com/go-json-experiment/json): three times faster than
// encoding/json here, and stricter: duplicate names, invalid UTF-8 and
// field names in the wrong case are errors.
func Decode(data []byte) (Stream, error) {
	s, ok := decodeCanonical(data) // what Unmarshal returns, for what appendStream writes
	if !ok {
		if err := jsonv2.Unmarshal(data, &s); err != nil {
			return Stream{}, invalid("decode stream: %v", err)
		}
	}
	// Unmarshal has checked the JSON syntax of bodies and state.
	if err := s.validate(false); err != nil {
		return Stream{}, fmt.Errorf("decode stream: %w", err)
	}
	return s, nil
}
