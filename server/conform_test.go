package server

import (
	"strings"
	"testing"
	"time"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
)

// The session bucket passes the store conformance suite.
func TestSessionBucketConforms(t *testing.T) {
	created := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	key := "s_" + strings.Repeat("ab", 32)
	mk := func(name string, via, subject string) *session {
		return &session{principal: principal{name: name, role: RoleOperator, via: via, subject: subject}, created: created, expires: created.Add(time.Hour)}
	}
	stored := func(rest string) []byte {
		return []byte(`{"v":1,"name":"alice","role":"operator",` + rest + `}`)
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[*session]{
		Spec:  SessionSpec(1),
		Codec: sessionCodec,
		Samples: []kvstoretest.Sample[*session]{
			{Key: key, Value: mk("alice", viaToken, "")},
			{Key: key, Value: mk("alice", viaOIDC, "https://idp.example/|alice")},
			{Key: "s_" + strings.Repeat("01", 32), Value: mk(LocalActor, viaLocal, "")},
		},
		Bad: []kvstoretest.Bad{
			{Name: "short key", Key: "s_abab", Value: stored(`"via":"token","created":1,"expires":2`), Field: "key"},
			{Name: "unknown role", Key: key, Value: []byte(`{"v":1,"name":"alice","role":"root","via":"token","created":1,"expires":2}`), Field: "role"},
			{Name: "a span over the TTL", Key: key, Value: stored(`"via":"token","created":1,"expires":99999999999`), Field: "expires"},
			{Name: "an OIDC session without a subject", Key: key, Value: stored(`"via":"oidc","created":1,"expires":2`), Field: "subject"},
			{Name: "an unknown member", Key: key, Value: stored(`"via":"token","created":1,"expires":2,"admin":true`), Field: ""},
			{Name: "version 2", Key: key, Value: []byte(`{"v":2,"name":"alice","role":"operator","via":"token","created":1,"expires":2}`), Field: "v"},
		},
	})
}

// The batch bucket, batches and Idempotency-Keys, passes the store
// conformance suite.
func TestBatchBucketConforms(t *testing.T) {
	at := time.Now().Add(-time.Minute).UnixMilli()
	batch := batchKey("req-1")
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[batchEntry]{
		Spec:  BatchSpec(1),
		Codec: batchCodec,
		Samples: []kvstoretest.Sample[batchEntry]{
			{Key: batch, Value: batchEntry{batch: &storedBatch{Running: true, BodyHash: "h1", StartedAt: at}}},
			{Key: batch, Value: batchEntry{batch: &storedBatch{BodyHash: "h1", StartedAt: at,
				Result: &api.BatchResult{Command: "prepare", Matched: 1, Counts: map[string]int{"prepared": 1}, Records: []api.BatchOutcome{{ID: "rec-1", Outcome: "prepared"}}}}}},
			{Key: idempotencyKey("key-1"), Value: batchEntry{key: &storedKey{Hash: "h2", At: at}}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "neither kind of key", Key: "x_1", Value: []byte(`{"hash":"h","at":1}`), Field: "key"},
			{Name: "a batch without its hash", Key: batch, Value: []byte(`{"running":true,"startedAt":1}`), Field: "bodyHash"},
			{Name: "a batch from the future", Key: batch, Value: []byte(`{"bodyHash":"h","startedAt":9000000000000000}`), Field: "startedAt"},
			{Name: "a count over the records", Key: batch, Value: []byte(`{"bodyHash":"h","startedAt":1,"result":{"command":"prepare","matched":0,"counts":{"prepared":3},"records":[]}}`), Field: "result.counts.prepared"},
			{Name: "a key without its hash", Key: idempotencyKey("key-1"), Value: []byte(`{"at":1}`), Field: "hash"},
		},
	})
}
