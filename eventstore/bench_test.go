package eventstore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/amends-dev/amends/eventstore"
)

// benchStream is a record's first stream as aggregate.Service writes it:
// one event with a failure and the record's state carried along.
func benchStream(i int) *eventstore.Stream {
	body := fmt.Sprintf(`{"eventId":{"id":"evt-%d","aggregateId":{"contextName":"order","aggregateName":"order","aggregateId":"o-%d","tenantId":"(0)"},"version":1},`+
		`"function":{"functionKind":"EVENT","contextName":"order","processorName":"Invoicer","name":"onOrder"},`+
		`"error":{"errorCode":"Timeout","errorMsg":"charge order \"o-%d\": card declined","stackTrace":"main.go:1\n\tinvoicer.go:2"},`+
		`"executeAt":1735000000123,"retrySpec":{"maxRetries":10,"minBackoff":180,"executionTimeout":120},"recoverable":"RECOVERABLE"}`, i, i, i)
	state := fmt.Sprintf(`{"state":{"id":"rec-%d","eventId":{"id":"evt-%d","aggregateId":{"contextName":"order","aggregateName":"order","aggregateId":"o-%d","tenantId":"(0)"},"version":1},`+
		`"function":{"functionKind":"EVENT","contextName":"order","processorName":"Invoicer","name":"onOrder"},`+
		`"error":{"errorCode":"Timeout","errorMsg":"charge order \"o-%d\": card declined","stackTrace":"main.go:1\n\tinvoicer.go:2"},`+
		`"executeAt":1735000000123,"retrySpec":{"maxRetries":10,"minBackoff":180,"executionTimeout":120},`+
		`"retryState":{"retries":0,"retryAt":1735000000123,"timeoutAt":1735000120123,"nextRetryAt":1735000180123},"status":"FAILED","recoverable":"RECOVERABLE"},"commandIds":["cmd-%d"]}`, i, i, i, i, i)
	return &eventstore.Stream{
		ID:        fmt.Sprintf("stream-%d", i),
		Aggregate: eventstore.AggregateID{Context: "compensation", Type: "execution_failed", ID: fmt.Sprintf("rec-%d", i)},
		Version:   1, CommandID: fmt.Sprintf("cmd-%d", i), RequestID: fmt.Sprintf("req-%d", i),
		Headers:    map[string]string{"actor": "recorder", "reason": "recorded"},
		CreateTime: 1735000000123,
		Events:     []eventstore.Event{{ID: fmt.Sprintf("ev-%d", i), Name: "execution_failed_created", Revision: "1", Body: json.RawMessage(body)}},
		State:      json.RawMessage(state),
	}
}

// BenchmarkEncode and BenchmarkDecode measure the stored document of a
// record's first stream: written on every append, read on every load and
// every consumed message.
func BenchmarkEncode(b *testing.B) {
	streams := make([]*eventstore.Stream, 256)
	for i := range streams {
		streams[i] = benchStream(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := eventstore.Encode(streams[i%len(streams)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkDecode(b *testing.B) {
	docs := make([][]byte, 256)
	for i := range docs {
		var err error
		if docs[i], err = eventstore.Encode(benchStream(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(docs[0])))
	i := 0
	for b.Loop() {
		if _, err := eventstore.Decode(docs[i%len(docs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
