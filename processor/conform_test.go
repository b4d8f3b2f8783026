package processor_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
	"github.com/amends-dev/amends/processor"
)

// conformNow is the buckets' clock in the conformance cases.
var conformNow = time.UnixMilli(1_735_000_000_000)

// The holds bucket passes the store conformance suite.
func TestHoldBucketConforms(t *testing.T) {
	at := conformNow.Add(-time.Minute).UnixMilli()
	hold := func(id string, held ...api.HeldEvent) (string, api.Hold) {
		return processor.HoldKey("billing", "Mailer", "send", "order", id), api.Hold{Context: "billing", Processor: "Mailer", Function: "send",
			AggregateType: "order", AggregateID: id, Head: api.HoldHead{Record: "rec-1", EventID: "e1", Version: 1, Seq: 3, Since: at}, Held: held}
	}
	k1, h1 := hold("o-1")
	_, h1b := hold("o-1", api.HeldEvent{EventID: "e2", Version: 2, Seq: 5, HeldAt: at})
	k2, h2 := hold("o-2")
	inFuture := h2
	inFuture.Head.Since = conformNow.Add(48 * time.Hour).UnixMilli()
	outOfOrder := h1b
	outOfOrder.Held = []api.HeldEvent{{EventID: "e3", Version: 3, Seq: 7, HeldAt: at}, {EventID: "e2", Version: 2, Seq: 5, HeldAt: at}}
	k3 := processor.HoldKey("billing", "Mailer", "send", "order", "o-3")
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[api.Hold]{
		Spec: processor.HoldSpec(1), Codec: processor.HoldCodec, Now: func() time.Time { return conformNow },
		Samples: []kvstoretest.Sample[api.Hold]{{Key: k1, Value: h1}, {Key: k1, Value: h1b}, {Key: k2, Value: h2}},
		Bad: []kvstoretest.Bad{
			{Name: "under another aggregate's key", Key: k3, Value: mustJSON(h1), Field: "*"},
			{Name: "a head from the future", Key: k2, Value: mustJSON(inFuture), Field: "*"},
			{Name: "held out of order", Key: k1, Value: mustJSON(outOfOrder), Field: "*"},
			{Name: "a key of four tokens", Key: "billing.Mailer.send.order", Value: mustJSON(h1), Field: "key"},
			{Name: "an id that is not base64url", Key: "billing.Mailer.send.order." + base64.RawURLEncoding.EncodeToString([]byte("o-1")) + "=", Value: mustJSON(h1), Field: "*"},
		},
	})
}

// The build registry passes the store conformance suite.
func TestBuildRegistryConforms(t *testing.T) {
	at := conformNow.Add(-time.Minute).UnixMilli()
	entry := func(instance, version string) (string, processor.BuildEntry) {
		return processor.BuildKey("billing", "Mailer", instance), processor.BuildEntry{Context: "billing", Processor: "Mailer", Instance: instance,
			Build: processor.Build{Version: version, Revision: "abc123"}, StartedAt: at, HeartbeatAt: at + 1}
	}
	k1, e1 := entry("i-1", "v1.0.0")
	_, e1b := entry("i-1", "v1.1.0")
	k2, e2 := entry("i-2", "v1.0.0")
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[processor.BuildEntry]{
		Spec: processor.BuildRegistrySpec("builds", time.Hour, 1), Codec: processor.BuildCodec, Now: func() time.Time { return conformNow },
		Samples: []kvstoretest.Sample[processor.BuildEntry]{{Key: k1, Value: e1}, {Key: k1, Value: e1b}, {Key: k2, Value: e2}},
		Bad: []kvstoretest.Bad{
			{Name: "no build", Key: processor.BuildKey("billing", "Mailer", "i-3"), Value: []byte(`{"context":"billing","processor":"Mailer","instance":"i-3","build":{},"startedAt":1,"heartbeatAt":1}`), Field: "build"},
			{Name: "another instance's entry", Key: k2, Value: []byte(`{"context":"billing","processor":"Mailer","instance":"i-1","build":{"version":"v1"},"startedAt":1,"heartbeatAt":1}`), Field: "instance"},
			{Name: "a heartbeat before the start", Key: k1, Value: []byte(`{"context":"billing","processor":"Mailer","instance":"i-1","build":{"version":"v1"},"startedAt":5,"heartbeatAt":1}`), Field: "heartbeatAt"},
			{Name: "a key of one token", Key: "i-1", Value: []byte(`{}`), Field: "key"},
		},
	})
}

// The range replay bucket passes the store conformance suite.
func TestReplayBucketConforms(t *testing.T) {
	at := conformNow.Add(-time.Minute).UnixMilli()
	replay := func(id, status string, next uint64) api.Replay {
		return api.Replay{ID: id, Context: "billing", Processor: "Projector", Function: "onStep", AggregateType: "order", AggregateID: "o-1",
			FromVersion: 1, ToVersion: 5, Rate: 50, Actor: "alice", Reason: "projection bug fixed", Created: at, Status: status, Next: next}
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[api.Replay]{
		Spec: processor.ReplaySpec(1), Codec: processor.ReplayCodec, Now: func() time.Time { return conformNow },
		Samples: []kvstoretest.Sample[api.Replay]{
			{Key: "r-1", Value: replay("r-1", processor.ReplayPending, 1)},
			{Key: "r-1", Value: replay("r-1", processor.ReplayRunning, 3)},
			{Key: "r-2", Value: replay("r-2", processor.ReplayDone, 6)},
		},
		Bad: []kvstoretest.Bad{
			{Name: "under another id", Key: "r-3", Value: mustJSON(replay("r-1", processor.ReplayPending, 1)), Field: "id"},
			{Name: "an unknown status", Key: "r-1", Value: mustJSON(replay("r-1", "LOST", 1)), Field: "status"},
			{Name: "next outside the range", Key: "r-2", Value: mustJSON(replay("r-2", processor.ReplayRunning, 9)), Field: "next"},
			{Name: "no reason", Key: "r-4", Value: mustJSON(func() api.Replay { r := replay("r-4", processor.ReplayPending, 1); r.Reason = ""; return r }()), Field: ""},
		},
	})
}

// The snapshot bucket, as the snapshot store binds it, passes the store
// conformance suite.
func TestSnapshotBucketConforms(t *testing.T) {
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[processor.Snapshot]{
		Spec:  kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: "snapshots", History: 1}, MaxValue: processor.MaxSnapshotValue},
		Codec: processor.SnapshotCodec,
		Samples: []kvstoretest.Sample[processor.Snapshot]{
			{Key: "billing.order.o-1", Value: processor.Snapshot{Version: 3, Seq: 9, State: json.RawMessage(`{"total":3}`)}},
			{Key: "billing.order.o-1", Value: processor.Snapshot{Version: 4, Seq: 12, State: json.RawMessage(`{"total":4}`)}},
			{Key: "billing.order.o-2", Value: processor.Snapshot{Version: 1, State: json.RawMessage(`[]`)}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "version 0", Key: "billing.order.o-3", Value: []byte(`{"version":0,"state":{}}`), Field: "version"},
			{Name: "a sequence below the version", Key: "billing.order.o-1", Value: []byte(`{"version":5,"seq":2,"state":{}}`), Field: "seq"},
			{Name: "no state", Key: "billing.order.o-2", Value: []byte(`{"version":1,"state":null}`), Field: "state"},
			{Name: "a key of two tokens", Key: "billing.order", Value: []byte(`{"version":1,"state":{}}`), Field: "key"},
		},
	})
}

// The progress bucket of Ordered functions passes the store conformance
// suite; a value read carries its revision's time, which is not stored.
func TestProgressBucketConforms(t *testing.T) {
	k1 := processor.HoldKey("billing", "Mailer", "send", "order", "o-1")
	k2 := processor.HoldKey("billing", "Mailer", "send", "order", "o-2")
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[processor.ProgressValue]{
		Spec: processor.ProgressSpec(1), Codec: processor.ProgressCodec,
		Samples: []kvstoretest.Sample[processor.ProgressValue]{
			{Key: k1, Value: processor.NewProgressValue(1, false)}, {Key: k1, Value: processor.NewProgressValue(2, true)},
			{Key: k2, Value: processor.NewProgressValue(18446744073709551615, false)},
		},
		Bad: []kvstoretest.Bad{
			{Name: "version 0", Key: processor.HoldKey("billing", "Mailer", "send", "order", "o-3"), Value: []byte("0"), Field: "version"},
			{Name: "a leading zero", Key: k1, Value: []byte("07h"), Field: "version"},
			{Name: "a sign", Key: k2, Value: []byte("+7"), Field: "version"},
			{Name: "out of range", Key: k2, Value: []byte("18446744073709551616"), Field: "version"},
			{Name: "not a hold's key", Key: "o-1", Value: []byte("3"), Field: "key"},
		},
		Equal: func(t *testing.T, want, got processor.ProgressValue) {
			wv, wh := processor.ProgressOf(want)
			gv, gh := processor.ProgressOf(got)
			assert.Equal(t, wv, gv, "version")
			assert.Equal(t, wh, gh, "held")
		},
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
