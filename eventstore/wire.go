package eventstore

import (
	"encoding/json"
	"fmt"
)

// Encode returns the stored JSON document of s after validating it. The
// error matches ErrInvalid and names the field.
func Encode(s *Stream) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, invalid("encode stream %s: %v", describe(s.ID), err)
	}
	return data, nil
}

// Decode parses a stored JSON document into a Stream and validates it. The
// returned stream's Seq is 0; the store sets it. The error matches
// ErrInvalid and says what is wrong with the document.
func Decode(data []byte) (Stream, error) {
	var s Stream
	if err := json.Unmarshal(data, &s); err != nil {
		return Stream{}, invalid("decode stream: %v", err)
	}
	if err := s.Validate(); err != nil {
		return Stream{}, fmt.Errorf("decode stream: %w", err)
	}
	return s, nil
}
