package eventstore_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id-%d", n) }
}

func TestNewStream(t *testing.T) {
	a := eventstore.AggregateID{Context: "billing", Type: "invoice", ID: "inv-1"}
	now := time.UnixMilli(1735000000000)
	st, err := eventstore.NewStream(a, now, counter(),
		eventstore.NewEvent{Name: "invoice_issued", Body: map[string]int{"cents": 1200}},
		eventstore.NewEvent{Name: "invoice_sent", Revision: "1.0.0"},
		eventstore.NewEvent{Name: "raw", Body: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.Equal(t, eventstore.Stream{
		ID: "id-1", Aggregate: a, CommandID: "id-2", CreateTime: 1735000000000,
		Events: []eventstore.Event{
			{ID: "id-3", Name: "invoice_issued", Body: json.RawMessage(`{"cents":1200}`)},
			{ID: "id-4", Name: "invoice_sent", Revision: "1.0.0", Body: json.RawMessage(`{}`)},
			{ID: "id-5", Name: "raw", Body: json.RawMessage(`{"a":1}`)},
		},
	}, st, "ids in order, a nil body is {}, version left to the store")

	for _, c := range []struct {
		name   string
		events []eventstore.NewEvent
		msg    string
	}{
		{"no events", nil, `stream "id-1" has no events; a stream holds at least one: eventstore: invalid`},
		{"bad name", []eventstore.NewEvent{{Name: "invoice.paid"}},
			`stream "id-1" event 0: event name "invoice.paid" has '.' at byte 7; only [A-Za-z0-9_-] are allowed: eventstore: invalid`},
		{"unencodable body", []eventstore.NewEvent{{Name: "x", Body: math.Inf(1)}},
			"event 0 (x) body cannot be encoded as JSON: json: unsupported value: +Inf: eventstore: invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := eventstore.NewStream(a, now, counter(), c.events...)
			require.ErrorIs(t, err, eventstore.ErrInvalid)
			assert.Equal(t, c.msg, err.Error(), "one sentinel, the field and the rule")
		})
	}
}

func ExampleNewStream() {
	n := 0
	ids := func() string { n++; return fmt.Sprint("id-", n) } // use uuid.NewString
	st, err := eventstore.NewStream(eventstore.AggregateID{Context: "billing", Type: "invoice", ID: "inv-1"},
		time.UnixMilli(1735000000000), ids, eventstore.NewEvent{Name: "invoice_issued", Body: map[string]int{"cents": 1200}})
	fmt.Println(st.ID, st.CommandID, st.CreateTime, st.Events[0].ID, string(st.Events[0].Body), err)
	// Output:
	// id-1 id-2 1735000000000 id-3 {"cents":1200} <nil>
}
