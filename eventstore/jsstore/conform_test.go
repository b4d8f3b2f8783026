package jsstore

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
)

// The skip bucket passes the store conformance suite.
func TestSkipBucketConforms(t *testing.T) {
	now := time.UnixMilli(1_735_000_000_000)
	at := now.Add(-time.Minute).UnixMilli()
	skip := func(seq, prev uint64, reason string) kvstoretest.Sample[Skip] {
		return kvstoretest.Sample[Skip]{Key: skipKey("AMENDS_ORDERS", seq), Value: Skip{Stream: "AMENDS_ORDERS", Seq: seq,
			Subject: "amends.orders.order.o-1", Prev: prev, Actor: "alice", Reason: reason, At: at}}
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[Skip]{
		Spec: skipSpec(1, jetstream.FileStorage), Codec: skipCodec, Now: func() time.Time { return now },
		Samples: []kvstoretest.Sample[Skip]{skip(7, 3, "garbage"), skip(7, 3, "garbage, approved again"), skip(9, 0, "not ours")},
		Bad: []kvstoretest.Bad{
			{Name: "under another sequence", Key: skipKey("AMENDS_ORDERS", 8), Value: []byte(`{"stream":"AMENDS_ORDERS","seq":7,"subject":"s","actor":"a","reason":"r","at":1}`), Field: "key"},
			{Name: "prev after the skipped one", Key: skipKey("AMENDS_ORDERS", 7), Value: []byte(`{"stream":"AMENDS_ORDERS","seq":7,"prev":9,"subject":"s","actor":"a","reason":"r","at":1}`), Field: "prev"},
			{Name: "no actor", Key: skipKey("AMENDS_ORDERS", 9), Value: []byte(`{"stream":"AMENDS_ORDERS","seq":9,"subject":"s","reason":"r","at":1}`), Field: "actor"},
			{Name: "approved in the future", Key: skipKey("AMENDS_ORDERS", 9), Value: []byte(`{"stream":"AMENDS_ORDERS","seq":9,"subject":"s","actor":"a","reason":"r","at":9000000000000000}`), Field: "at"},
		},
	})
}
