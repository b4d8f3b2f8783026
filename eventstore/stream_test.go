package eventstore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

func validStream() eventstore.Stream {
	return eventstore.Stream{
		ID:         "s-1",
		Aggregate:  eventstore.AggregateID{Context: "orders", Type: "order", ID: "o-1"},
		Version:    1,
		CreateTime: 1735000000000,
		Events:     []eventstore.Event{{ID: "e-1", Name: "order_created", Body: json.RawMessage(`{"sku":"A"}`)}},
	}
}

func TestStreamValidation(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*eventstore.Stream)
		want   string // "" means valid
	}{
		{"valid", func(*eventstore.Stream) {}, ""},
		{"unicode aggregate id", func(s *eventstore.Stream) { s.Aggregate.ID = "订单 42.*>" }, ""},
		{"empty stream id", func(s *eventstore.Stream) { s.ID = "" }, "stream id is empty"},
		{"long stream id", func(s *eventstore.Stream) { s.ID = strings.Repeat("x", 257) }, "stream id is 257 bytes, over the limit of 256"},
		{"invalid utf8 id", func(s *eventstore.Stream) { s.Aggregate.ID = "\xff" }, "not valid UTF-8"},
		{"control char id", func(s *eventstore.Stream) { s.Aggregate.ID = "a\x00" }, "control character U+0000"},
		{"empty context", func(s *eventstore.Stream) { s.Aggregate.Context = "" }, "aggregate context is empty"},
		{"dotted type", func(s *eventstore.Stream) { s.Aggregate.Type = "a.b" }, `aggregate type "a.b" has '.' at byte 1`},
		{"long type", func(s *eventstore.Stream) { s.Aggregate.Type = strings.Repeat("t", 65) }, "65 characters, over the limit of 64"},
		{"version zero", func(s *eventstore.Stream) { s.Version = 0 }, "version is 0"},
		{"no events", func(s *eventstore.Stream) { s.Events = nil }, "has no events"},
		{"event without id", func(s *eventstore.Stream) { s.Events[0].ID = "" }, "event 0: event id is empty"},
		{"event with bad name", func(s *eventstore.Stream) { s.Events[0].Name = "a*" }, `event name "a*"`},
		{"empty body", func(s *eventstore.Stream) { s.Events[0].Body = nil }, "empty body; use {}"},
		{"invalid body", func(s *eventstore.Stream) { s.Events[0].Body = json.RawMessage("{x") }, "body is not valid JSON"},
		{"invalid state", func(s *eventstore.Stream) { s.State = json.RawMessage("[") }, "state is not valid JSON"},
		{"header with newline", func(s *eventstore.Stream) { s.Headers = map[string]string{"reason": "a\nb"} }, `header "reason" has a control character`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validStream()
			c.mutate(&s)
			err := s.Validate()
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, eventstore.ErrInvalid)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	s := validStream()
	s.CommandID, s.RequestID, s.TraceID = "c", "r", "t"
	s.Headers = map[string]string{"actor": "alice", "reason": "migrated"}
	s.State = json.RawMessage(`{"status":"FAILED"}`)
	data, err := eventstore.Encode(&s)
	require.NoError(t, err)
	got, err := eventstore.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, s, got)
}

func TestDecodeRejectsWhatEncodeWouldNot(t *testing.T) {
	for _, doc := range []string{``, `null`, `[]`, `{"id":"x"}`, `{"id":"x","aggregate":{"context":"a","type":"b","id":"c"},"version":1,"events":[]}`} {
		_, err := eventstore.Decode([]byte(doc))
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "document %q", doc)
	}
}

func TestConflictErrorMessage(t *testing.T) {
	err := error(&eventstore.ConflictError{Aggregate: eventstore.AggregateID{Context: "c", Type: "t", ID: "1"}, Expected: 2, Actual: 5})
	assert.ErrorIs(t, err, eventstore.ErrConflict)
	assert.EqualError(t, err, "append to c.t/1 expected version 2 but it is at version 5: eventstore: version conflict")
}

func FuzzDecode(f *testing.F) {
	s := validStream()
	data, _ := eventstore.Encode(&s)
	f.Add(data)
	f.Add([]byte(`{"id":"x","aggregate":{"context":"a","type":"b","id":"c"},"version":1,"events":[{"id":"e","name":"n","body":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := eventstore.Decode(data)
		if err != nil {
			assert.ErrorIs(t, err, eventstore.ErrInvalid)
			return
		}
		// Whatever decodes is valid and survives a round trip.
		again, err := eventstore.Encode(&s)
		require.NoError(t, err)
		back, err := eventstore.Decode(again)
		require.NoError(t, err)
		assert.Equal(t, s.ID, back.ID)
		assert.Equal(t, s.Version, back.Version)
		assert.Len(t, back.Events, len(s.Events))
	})
}
