package eventstore

import (
	"encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-written encoder writes what json/v2's Marshal writes for the
// same Stream, byte for byte, and fails where it fails.
func TestAppendStreamWritesWhatMarshalWrites(t *testing.T) {
	bodies := []string{
		`{}`, ` { "a" : 1 , "b":[ 1, 2.50, 1e3, -0 ] } `, `"\u003c\/x\u00e9"`, `{"a":"\ud83d\ude00"}`, `null`, `true`,
		`{"x":{"y":[{"z":null}]}}`, "\"é\u2028\"", `"tab\there"`,
		// Refused by both:
		`{"a":1,"a":2}`, `{"a":}`, "\"\xff\"", `{} x`, `[1,]`, `{"a":"\ud800"}`,
	}
	states := []string{"", `null`, ` null `, `{"state":{"id":"r"},"commandIds":["c"]}`, `{"a":1,"a":1}`}
	strs := []string{"plain", `quote " and \ backslash`, "tab\tand\nnewline", "é ü 😀", "\u2028", "<&>", "\xff"}
	n := 0
	for _, body := range bodies {
		for _, state := range states {
			for _, str := range strs {
				s := &Stream{
					ID: "s-1", Aggregate: AggregateID{Context: "shop", Type: "order", ID: str}, Version: 3,
					CommandID: str, TraceID: "t", Headers: map[string]string{"b": str, "a": "1", "ü": "x"}, CreateTime: 1735000000000,
					Events: []Event{{ID: "e-1", Name: "n", Body: json.RawMessage(body)}, {ID: "e-2", Name: str, Revision: "1.0", Body: json.RawMessage(`{}`)}},
				}
				if state != "" {
					s.State = json.RawMessage(state)
				}
				want, wantErr := jsonv2.Marshal(s, jsonv2.Deterministic(true))
				got, gotErr := appendStream(nil, s)
				if wantErr != nil {
					assert.Error(t, gotErr, "body %q state %q string %q: Marshal fails with %v", body, state, str, wantErr)
					continue
				}
				require.NoError(t, gotErr, "body %q state %q string %q", body, state, str)
				assert.Equal(t, string(want), string(got), "body %q state %q string %q", body, state, str)
				n++
			}
		}
	}
	assert.Greater(t, n, 100, "most combinations encode")
	plain := &Stream{ID: "s", Aggregate: AggregateID{Context: "c", Type: "t", ID: "i"}, Version: 1, Events: []Event{{ID: "e", Name: "n", Body: nil}}}
	want, err := jsonv2.Marshal(plain, jsonv2.Deterministic(true))
	require.NoError(t, err)
	got, err := appendStream(nil, plain)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "optional fields omitted, a nil body is null")
}

func FuzzAppendStreamWritesWhatMarshalWrites(f *testing.F) {
	f.Add(`{"a":1}`, `{"s":true}`, "x", "v")
	f.Add(` [ 1 , "\u0041" ] `, ` null `, "é", "\t")
	f.Add(`{"a":1,"a":2}`, "", "\xff", "")
	f.Fuzz(func(t *testing.T, body, state, id, header string) {
		s := &Stream{ID: id, Aggregate: AggregateID{Context: "c", Type: "t", ID: id}, Version: 1, CommandID: header,
			Headers: map[string]string{header: id, "k": header}, Events: []Event{{ID: id, Name: header, Body: json.RawMessage(body)}}}
		if state != "" {
			s.State = json.RawMessage(state)
		}
		want, wantErr := jsonv2.Marshal(s, jsonv2.Deterministic(true))
		got, gotErr := appendStream(nil, s)
		if wantErr != nil {
			if gotErr == nil {
				t.Fatalf("Marshal fails with %v, appendStream wrote %s", wantErr, got)
			}
			return
		}
		if gotErr != nil {
			t.Fatalf("Marshal wrote %s, appendStream fails with %v", want, gotErr)
		}
		if string(want) != string(got) {
			t.Fatalf("Marshal wrote\n%s\nappendStream wrote\n%s", want, got)
		}
	})
}

// The size hint holds a document whose strings need no escapes and whose
// bodies and state are compact, with every optional field set and the
// widest numbers: a short hint would double the buffer on every append.
func TestTheSizeHintHoldsTheDocument(t *testing.T) {
	for _, events := range []int{0, 1, 3} {
		s := &Stream{
			ID: "0b6f7a3e-5f8e-4a8e-9c1b-2d7a3c1e9f00", Aggregate: AggregateID{Context: "compensation", Type: "execution_failed", ID: "r-0b6f7a3e"},
			Version: ^uint64(0), CommandID: "c-1", RequestID: "q-1", TraceID: "t-1", CreateTime: -1 << 63,
			Headers: map[string]string{"actor": "recorder", "a": ""}, State: json.RawMessage(`{"state":{"id":"r"},"commandIds":["c"]}`),
		}
		for range events {
			s.Events = append(s.Events, Event{ID: "e", Name: "execution_failed_created", Revision: "0.0.1", Body: json.RawMessage(`{"x":[1,2]}`)})
		}
		got, err := appendStream(nil, s)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(got), encodedSizeHint(s), "%d events: %s", events, got)
	}
}
