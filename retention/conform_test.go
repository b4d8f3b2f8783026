package retention

import (
	"fmt"
	"testing"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
)

var conformFn = aggregate.FunctionInfo{ContextName: "billing", ProcessorName: "Mailer", Name: "send", FunctionKind: aggregate.KindEvent}

// The sweeper's state in the retention bucket passes the store
// conformance suite, on its one key.
func TestSweepStateConforms(t *testing.T) {
	now := time.UnixMilli(1_735_000_000_000)
	at := now.Add(-time.Minute).UnixMilli()
	pending := &SweepBatch{N: 8, StartedAt: at, Records: []Removal{{ID: "0193b6b2-0000-7000-8000-000000000001", Through: 4, Version: 3,
		Function: conformFn, ErrorCode: "Timeout", Status: aggregate.StatusSucceeded, ExecuteAt: at}}}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[SweepState]{
		Spec:  retentionSpec("retention", 1),
		Codec: sweepCodec,
		Now:   func() time.Time { return now },
		Samples: []kvstoretest.Sample[SweepState]{
			{Key: sweepKey, Value: SweepState{Batch: 7, Removed: 10, Messages: 40, UpdatedAt: at}},
			{Key: sweepKey, Value: SweepState{Batch: 7, Removed: 10, Messages: 40, UpdatedAt: at, Pending: pending}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "negative counts", Key: sweepKey, Value: []byte(`{"batch":1,"removed":-1,"updatedAt":1}`), Field: "removed"},
			{Name: "another key", Key: "sweep2", Value: []byte(`{"batch":1,"updatedAt":1}`), Field: "key"},
			{Name: "a pending batch out of turn", Key: sweepKey, Value: fmt.Appendf(nil, `{"batch":1,"updatedAt":1,"pending":{"n":5,"startedAt":%d,"records":[]}}`, at), Field: "pending.n"},
			{Name: "a live record in the batch", Key: sweepKey, Value: fmt.Appendf(nil,
				`{"batch":1,"updatedAt":1,"pending":{"n":2,"startedAt":%d,"records":[{"id":"r1","through":1,"version":1,"status":"PREPARED","executeAt":1,"function":{"contextName":"a","processorName":"b","name":"c"}}]}}`, at),
				Field: "pending.records[0].status"},
		},
	})
}

// The tallies in the retention bucket pass the store conformance suite.
func TestTallyConforms(t *testing.T) {
	now := time.UnixMilli(1_735_000_000_000)
	at := now.Add(-time.Hour).UnixMilli()
	key := tallyKey(conformFn, "Timeout", "fp1")
	tally := func(succeeded int64) Tally {
		return Tally{Function: conformFn, ErrorCode: "Timeout", Fingerprint: "fp1", Succeeded: succeeded, FirstAt: at, LastAt: at, LastBatch: 3}
	}
	other := Tally{Function: conformFn, ErrorCode: "Declined", Unrecoverable: 2, FirstAt: at, LastAt: at + 1, LastBatch: 4}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[Tally]{
		Spec:  retentionSpec("retention", 1),
		Codec: tallyCodec,
		Now:   func() time.Time { return now },
		Samples: []kvstoretest.Sample[Tally]{
			{Key: key, Value: tally(1)}, {Key: key, Value: tally(2)}, {Key: tallyKey(conformFn, "Declined", ""), Value: other},
		},
		Bad: []kvstoretest.Bad{
			{Name: "under another group's key", Key: tallyKey(conformFn, "Other", ""), Value: []byte(`{"function":{"contextName":"billing","processorName":"Mailer","name":"send"},"errorCode":"Timeout","fingerprint":"fp1","firstAt":1,"lastAt":1}`), Field: "key"},
			{Name: "times out of order", Key: key, Value: []byte(`{"function":{"contextName":"billing","processorName":"Mailer","name":"send"},"errorCode":"Timeout","fingerprint":"fp1","firstAt":5,"lastAt":1}`), Field: "firstAt"},
			{Name: "no function", Key: key, Value: []byte(`{"errorCode":"Timeout","fingerprint":"fp1","firstAt":1,"lastAt":1}`), Field: "function.contextName"},
		},
	})
}
