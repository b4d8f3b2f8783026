package aggregate_test

// Execute on an existing record next to the raw JetStream operations it
// rests on, in the same run: compare the ns/op of "amends" and "raw".
// Run: go test -run '^$' -bench Execute ./aggregate/

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	. "github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

func BenchmarkExecute(b *testing.B) {
	const records = 256
	js := natstest.New(b).JetStream()
	store, err := jsstore.New(js)
	if err != nil {
		b.Fatal(err)
	}
	svc := NewService(store, WithClock(newClock(t0)))
	ids := make([]string, 2*records)
	for i := range ids {
		ids[i] = fmt.Sprintf("rec-%d", i)
		if _, err := svc.Execute(b.Context(), ids[i], create, Meta{}); err != nil {
			b.Fatal(err)
		}
	}
	stream, err := js.Stream(b.Context(), store.StreamName(Context))
	if err != nil {
		b.Fatal(err)
	}
	// raw: read the last message of a record's subject, publish a message of
	// the same size with the expected last subject sequence.
	b.Run("raw", func(b *testing.B) {
		i := 0
		for b.Loop() {
			subj, _ := store.Subject(RecordAggregate(ids[records+i%records]))
			last, err := stream.GetLastMsgForSubject(context.Background(), subj)
			if err != nil {
				b.Fatal(err)
			}
			m := nats.NewMsg(subj)
			m.Data = last.Data
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last.Sequence, 10))
			m.Header.Set(jetstream.MsgIDHeader, strconv.Itoa(i)+"-"+b.Name())
			if _, err := js.PublishMsg(context.Background(), m); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("amends", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := svc.Execute(context.Background(), ids[i%records], ApplyRetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}, Meta{Actor: "bench"}); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
}

// BenchmarkEncodeEvent: a record's creation, with a 15-line stack trace,
// through EncodeEvent ("amends") and through encoding/json ("raw"), which
// EncodeEvent used before and whose JSON it writes.
func BenchmarkEncodeEvent(b *testing.B) {
	e := ExecutionFailedCreated{EventID: evtID, Function: fn, ExecuteAt: t0, RetrySpec: DefaultRetrySpec, Recoverable: Recoverable,
		Error: ErrorDetails{ErrorCode: "BadRequest", ErrorMsg: "charge <order> & retry", StackTrace: strings.Repeat("main.charge()\n\t/srv/billing/charge.go:42 +0x1d\n", 15)}}
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("amends", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := EncodeEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
