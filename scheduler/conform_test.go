package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/rollout"
	"github.com/amends-dev/amends/scheduler"
)

// The deploy releases' bucket passes the store conformance suite.
func TestParkReleaseBucketConforms(t *testing.T) {
	now := t0.Add(time.Hour)
	ms := t0.UnixMilli()
	release := func(proc string, p rollout.Progress) kvstoretest.Sample[scheduler.ParkRelease] {
		return kvstoretest.Sample[scheduler.ParkRelease]{Key: releaseKey("order", proc), Value: scheduler.ParkRelease{Context: "order", Processor: proc,
			Build: processor.Build{Version: "v2"}, PreviousBuild: processor.Build{Version: "v1"}, Progress: p}}
	}
	started := release("OrderProjector", rollout.Progress{Phase: scheduler.PhaseSteps, Step: 1, StartedAt: ms, Batch: []rollout.Record{{ID: "r-1", Attempt: 2}}, UpdatedAt: ms})
	halted := release("OrderProjector", rollout.Progress{Phase: scheduler.PhaseHalted, Step: 2, StartedAt: ms, Released: 3, Succeeded: 1, Failed: 2, Halt: "the step failed", UpdatedAt: ms})
	other := release("Mailer", rollout.Progress{Phase: scheduler.PhaseSteps, StartedAt: ms, UpdatedAt: ms})
	bad := func(proc string, change func(*scheduler.ParkRelease)) []byte {
		r := started.Value
		r.Processor = proc
		change(&r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[scheduler.ParkRelease]{
		Spec: scheduler.ParkReleaseSpec("releases", 1), Codec: scheduler.ParkReleaseCodec, Now: func() time.Time { return now },
		Samples: []kvstoretest.Sample[scheduler.ParkRelease]{started, halted, other},
		Bad: []kvstoretest.Bad{
			{Name: "no build", Key: releaseKey("order", "Billing"), Value: bad("Billing", func(r *scheduler.ParkRelease) { r.Build = processor.Build{} }), Field: "build"},
			{Name: "another processor's release", Key: releaseKey("order", "Mailer"), Value: bad("OrderProjector", func(*scheduler.ParkRelease) {}), Field: "processor"},
			{Name: "a step past the bound", Key: started.Key, Value: bad("OrderProjector", func(r *scheduler.ParkRelease) { r.Step = scheduler.MaxParkReleaseSteps + 1 }), Field: "step"},
			{Name: "a halt reason while running", Key: started.Key, Value: bad("OrderProjector", func(r *scheduler.ParkRelease) { r.Halt = "not halted" }), Field: "halt"},
		},
	})
}

// The lease bucket passes the store conformance suite.
func TestLeaseBucketConforms(t *testing.T) {
	now := t0.Add(time.Hour)
	ms := t0.UnixMilli()
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[scheduler.LeaseValue]{
		Spec: scheduler.DefaultLeaseSpec(), Codec: scheduler.LeaseCodec, Now: func() time.Time { return now },
		Samples: []kvstoretest.Sample[scheduler.LeaseValue]{
			{Key: "scheduler", Value: scheduler.NewLeaseValue("host-a/1", ms)}, {Key: "scheduler", Value: scheduler.NewLeaseValue("host-b/2", ms+1)},
			{Key: "retention", Value: scheduler.NewLeaseValue("host-a/1", ms)},
		},
		Bad: []kvstoretest.Bad{
			{Name: "no holder", Key: "drains", Value: []byte(`{"renewedAt":1}`), Field: "holder"},
			{Name: "renewed in the future", Key: "scheduler", Value: []byte(`{"holder":"h","renewedAt":9000000000000000}`), Field: "renewedAt"},
		},
	})
}

// The partitions' bucket passes the store conformance suite.
func TestPartitionsBucketConforms(t *testing.T) {
	plan := func(owners map[string]string, splits map[string]int) partition.Plan {
		return partition.Plan{Splits: splits, Owners: owners}
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[partition.Plan]{
		Spec: scheduler.PartitionsSpec("partitions", 1), Codec: scheduler.PlanCodec,
		Samples: []kvstoretest.Sample[partition.Plan]{
			{Key: "plan", Value: plan(map[string]string{"Mailer": "a", "Billing": "b"}, nil)},
			{Key: "plan", Value: plan(map[string]string{"Mailer/0/2": "a", "Mailer/1/2": "b", "Billing": "b"}, map[string]int{"Mailer": 2})},
		},
		Bad: []kvstoretest.Bad{
			{Name: "another key", Key: "other", Value: []byte(`{"owners":{"Mailer":"a"}}`), Field: "key"},
			{Name: "a missing part", Key: "plan", Value: []byte(`{"splits":{"Mailer":2},"owners":{"Mailer/0/2":"a"}}`), Field: "owners"},
			{Name: "a split of three", Key: "plan", Value: []byte(`{"splits":{"Mailer":3},"owners":{}}`), Field: "owners"},
			{Name: "no owner", Key: "plan", Value: []byte(`{"owners":{"Mailer":""}}`), Field: "owners"},
		},
	})
}

// The members' sizes, in the same bucket, pass it too.
func TestPartitionSizesConform(t *testing.T) {
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[scheduler.Sizes]{
		Spec: scheduler.PartitionsSpec("partitions", 1), Codec: scheduler.SizesCodec,
		Samples: []kvstoretest.Sample[scheduler.Sizes]{
			{Key: "sizes.a", Value: scheduler.Sizes{Records: map[string]uint64{"Mailer": 3, "Billing": 1}}},
			{Key: "sizes.a", Value: scheduler.Sizes{Records: map[string]uint64{"Mailer": 4}}},
			{Key: "sizes.=aG9zdC8x", Value: scheduler.Sizes{Records: map[string]uint64{}, Unplaced: map[string]uint64{"New": 7}}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "another key", Key: "plan", Value: []byte(`{"records":{}}`), Field: "key"},
			{Name: "a key of no instance", Key: "sizes.=A", Value: []byte(`{"records":{}}`), Field: "key"},
			{Name: "a part for a processor", Key: "sizes.a", Value: []byte(`{"records":{"Mailer/0/2":1}}`), Field: "records"},
			{Name: "no processor", Key: "sizes.a", Value: []byte(`{"unplaced":{"":1}}`), Field: "unplaced"},
			{Name: "a negative count", Key: "sizes.a", Value: []byte(`{"records":{"Mailer":-1}}`), Field: ""},
		},
	})
}
