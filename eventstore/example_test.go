package eventstore_test

import (
	"encoding/json"
	"fmt"

	"github.com/amends-dev/amends/eventstore"
)

func ExampleEncode() {
	s := eventstore.Stream{
		ID:         "7c1f",
		Aggregate:  eventstore.AggregateID{Context: "orders", Type: "order", ID: "o-42"},
		Version:    1,
		CommandID:  "cmd-1",
		CreateTime: 1735000000000,
		Events:     []eventstore.Event{{ID: "e-1", Name: "order_created", Body: json.RawMessage(`{"sku":"A-1"}`)}},
	}
	data, err := eventstore.Encode(&s)
	fmt.Println(string(data), err)

	s.Events = nil
	_, err = eventstore.Encode(&s)
	fmt.Println(err)
	// Output:
	// {"id":"7c1f","aggregate":{"context":"orders","type":"order","id":"o-42"},"version":1,"commandId":"cmd-1","createTime":1735000000000,"events":[{"id":"e-1","name":"order_created","body":{"sku":"A-1"}}]} <nil>
	// stream "7c1f" has no events; a stream holds at least one: eventstore: invalid
}
