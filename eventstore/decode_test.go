package eventstore

import (
	"encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireDecodesAsUnmarshal fails unless decodeCanonical, where it takes
// data, returns what json/v2's Unmarshal returns; it reports whether it
// took data.
func requireDecodesAsUnmarshal(t testing.TB, data []byte) bool {
	t.Helper()
	got, ok := decodeCanonical(data)
	if !ok {
		return false
	}
	var want Stream
	require.NoError(t, jsonv2.Unmarshal(data, &want), "decodeCanonical took a document Unmarshal refuses: %s", data)
	require.Equal(t, want, got, "document %s", data)
	return true
}

func TestDecodeCanonicalReturnsWhatUnmarshalReturns(t *testing.T) {
	bodies := []string{`{}`, `{"a":1,"b":[1,2.5,1e3,-0]}`, `"x\"y\\"`, `"\u003c"`, `{"a":"\ud83d\ude00"}`, `true`, `false`, `-12.5e-3`, `0`,
		`[]`, `[[],{}]`, `{"x":{"y":[{"z":null}]}}`, "\"é\u2028\"", `{"}":"]","{":"["}`}
	states := []string{"", `{"id":"r","status":"FAILED"}`, `[1,{"a":"}"}]`, `7`}
	strs := []string{"plain", "é ü 😀", "<&>", "\u2028"}
	n := 0
	for _, body := range bodies {
		for _, state := range states {
			for _, str := range strs {
				for _, headers := range []map[string]string{nil, {"actor": str}, {"a": "1", "b": str}} {
					s := &Stream{
						ID: "s-1", Aggregate: AggregateID{Context: "shop", Type: "order", ID: str}, Version: 3,
						CommandID: str, RequestID: "r", TraceID: "t", Headers: headers, CreateTime: -1735000000000,
						Events: []Event{{ID: "e-1", Name: "n", Body: json.RawMessage(body)}, {ID: "e-2", Name: "m", Revision: str, Body: json.RawMessage(`{}`)}},
					}
					if state != "" {
						s.State = json.RawMessage(state)
					}
					data, err := appendStream(nil, s)
					require.NoError(t, err)
					require.True(t, requireDecodesAsUnmarshal(t, data), "the encoder's own layout is decoded: %s", data)
					n++
				}
			}
		}
	}
	assert.Greater(t, n, 500)
}

// Documents outside the encoder's layout are left to Unmarshal (which may
// accept or refuse them); none is decoded differently.
func TestDecodeCanonicalLeavesEveryOtherDocumentToUnmarshal(t *testing.T) {
	const ok = `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`
	require.True(t, requireDecodesAsUnmarshal(t, []byte(ok)))
	spaced := `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{ "a" : [ 1 , "\u0041" ] }}],"state":[ {} ]}`
	require.True(t, requireDecodesAsUnmarshal(t, []byte(spaced)), "whitespace and escapes inside a body or the state are kept, as Unmarshal keeps them")
	cases := map[string]string{
		"whitespace":          `{ "id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"space after a body":  `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":1 }]}`,
		"escape in a string":  `{"id":"s\u0041","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"fields reordered":    `{"aggregate":{"context":"c","type":"t","id":"i"},"id":"s","version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"unknown field":       `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"x":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"duplicate field":     `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{"a":1,"a":2}}]}`,
		"null body":           `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":null}]}`,
		"null state":          `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}],"state":null}`,
		"no body":             `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n"}]}`,
		"no events":           `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[]}`,
		"null events":         `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":null}`,
		"empty headers":       `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"headers":{},"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"negative version":    `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":-1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"version too large":   `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":18446744073709551616,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"fractional version":  `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1.0,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"exponent time":       `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5e3,"events":[{"id":"e","name":"n","body":{}}]}`,
		"minus zero time":     `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":-0,"events":[{"id":"e","name":"n","body":{}}]}`,
		"time too small":      `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":-9223372036854775809,"events":[{"id":"e","name":"n","body":{}}]}`,
		"leading zero":        `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":01,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"leading zero time":   `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":-05,"events":[{"id":"e","name":"n","body":{}}]}`,
		"bad escape in body":  `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":"\ud800"}]}`,
		"duplicate in state":  `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}],"state":{"x":{"a":1,"a":1}}}`,
		"string version":      `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":"1","createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"trailing data":       ok + `x`,
		"trailing space":      ok + ` `,
		"two documents":       ok + ok,
		"invalid UTF-8":       `{"id":"s` + "\xff" + `","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"cut short":           ok[:len(ok)-3],
		"wrong case":          `{"ID":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"duplicate header":    `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"headers":{"a":"1","a":"2"},"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"number header":       `{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"headers":{"a":1},"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"control in a string": `{"id":"s` + "\t" + `","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`,
		"empty":               ``,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.False(t, requireDecodesAsUnmarshal(t, []byte(doc)), "left to Unmarshal")
			_, refErr := func() (Stream, error) { var s Stream; return s, jsonv2.Unmarshal([]byte(doc), &s) }()
			_, err := Decode([]byte(doc))
			if refErr != nil {
				require.Error(t, err, "Decode refuses what Unmarshal refuses")
			}
		})
	}
}

// A body decoded by decodeCanonical is its own: appending to it leaves
// the next value and the document alone.
func TestDecodeCanonicalValuesDoNotShareMemory(t *testing.T) {
	data := []byte(`{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":[1]},{"id":"f","name":"n","body":[2]}],"state":{}}`)
	s, ok := decodeCanonical(data)
	require.True(t, ok)
	_ = append(s.Events[0].Body, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x')
	assert.Equal(t, `[2]`, string(s.Events[1].Body))
	assert.Equal(t, `{}`, string(s.State))
	data[len(data)-3] = ']'
	assert.Equal(t, `{}`, string(s.State), "the state does not alias the document")
}

// FuzzDecodeCanonical: on any document decodeCanonical takes, arbitrary
// or written by appendStream, it returns what Unmarshal returns.
func FuzzDecodeCanonical(f *testing.F) {
	f.Add([]byte(`{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"createTime":5,"events":[{"id":"e","name":"n","body":{}}]}`), "x", `{"a":[1,"]"]}`, int64(-3))
	f.Add([]byte(`{"id":"s","aggregate":{"context":"c","type":"t","id":"i"},"version":1,"headers":{"a":"b"},"createTime":5,"events":[{"id":"e","name":"n","revision":"1","body":"}"}],"state":[]}`), "é", `"\\"`, int64(0))
	f.Fuzz(func(t *testing.T, doc []byte, str, body string, at int64) {
		requireDecodesAsUnmarshal(t, doc)
		s := &Stream{ID: "s", Aggregate: AggregateID{Context: "c", Type: "t", ID: str}, Version: uint64(at), CreateTime: at,
			Headers: map[string]string{"k": str}, Events: []Event{{ID: "e", Name: "n", Revision: str, Body: json.RawMessage(body)}}, State: json.RawMessage(body)}
		data, err := appendStream(nil, s)
		if err != nil {
			return
		}
		requireDecodesAsUnmarshal(t, data)
	})
}
