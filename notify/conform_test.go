package notify

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
)

// The dedup bucket passes the store conformance suite.
func TestDedupBucketConforms(t *testing.T) {
	at := time.Now().Add(-time.Minute).UnixMilli()
	key := dedupKey("https://hooks.example/a", "k1")
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[claim]{
		Spec:  dedupSpec(1, jetstream.MemoryStorage),
		Codec: claimCodec,
		Samples: []kvstoretest.Sample[claim]{
			{Key: key, Value: claim{Event: "n-1", At: at}},
			{Key: key, Value: claim{Event: "n-1", At: at, Delivered: true}},
			{Key: dedupKey("https://hooks.example/b", "k1"), Value: claim{Event: "n-2", At: at}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "no event", Key: dedupKey("https://hooks.example/c", "k1"), Value: []byte(`{"at":1}`), Field: "event"},
			{Name: "not a dedup key", Key: "x_1", Value: []byte(`{"event":"n-1","at":1}`), Field: "key"},
		},
	})
}

// The digest bucket, groups and its meta entry, passes the store
// conformance suite.
func TestDigestBucketConforms(t *testing.T) {
	key := groupKey("ctx/proc/fn", "Timeout")
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[digestEntry]{
		Spec:  digestSpec(1, jetstream.MemoryStorage),
		Codec: digestCodec,
		Samples: []kvstoretest.Sample[digestEntry]{
			{Key: key, Value: digestEntry{group: &group{Function: "ctx/proc/fn", ErrorCode: "Timeout", Failures: 3}}},
			{Key: key, Value: digestEntry{group: &group{Function: "ctx/proc/fn", ErrorCode: "Timeout", Successes: 1, Status: statusFailing}}},
			{Key: digestMeta, Value: digestEntry{meta: &digestMetaEntry{Last: time.Now().Add(-time.Hour).UnixMilli()}}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "unknown status", Key: groupKey("ctx/proc/other", "Timeout"), Value: []byte(`{"function":"f","status":"sleeping"}`), Field: "status"},
			{Name: "no function", Key: key, Value: []byte(`{"errorCode":"Timeout"}`), Field: "function"},
			{Name: "neither kind of key", Key: "x_1", Value: []byte(`{"function":"f"}`), Field: "key"},
		},
	})
}
