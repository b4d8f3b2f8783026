package circuit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
	"github.com/amends-dev/amends/rollout"
)

// The circuits bucket passes the store conformance suite.
func TestCircuitBucketConforms(t *testing.T) {
	other := circuit.Function{Context: mailer.Context, Processor: mailer.Processor, Name: "audit"}
	changed := func(s circuit.State, change func(*circuit.State)) []byte {
		change(&s)
		return encode(t, s)
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[circuit.State]{
		Spec: circuit.Spec("circuits", 1, jetstream.MemoryStorage), Codec: circuit.StateCodec, Now: func() time.Time { return at(time.Minute) },
		Samples: []kvstoretest.Sample[circuit.State]{
			{Key: mailer.String(), Value: open()}, {Key: mailer.String(), Value: halfOpen()}, {Key: other.String(), Value: circuit.New(other)},
		},
		Bad: []kvstoretest.Bad{
			{Name: "an unknown phase", Key: circuit.Function{Context: mailer.Context, Processor: mailer.Processor, Name: "third"}.String(),
				Value: changed(circuit.New(circuit.Function{Context: mailer.Context, Processor: mailer.Processor, Name: "third"}), func(s *circuit.State) { s.Phase = "AJAR" }), Field: "phase"},
			{Name: "another function's circuit", Key: other.String(), Value: changed(open(), func(*circuit.State) {}), Field: "function"},
			{Name: "negative refusals", Key: mailer.String(), Value: changed(open(), func(s *circuit.State) { s.Refused = -1 }), Field: "refused"},
			{Name: "a key of two names", Key: "shop.Mailer", Value: changed(open(), func(*circuit.State) {}), Field: "key"},
		},
	})
}

// The drains bucket passes the store conformance suite.
func TestDrainBucketConforms(t *testing.T) {
	other := circuit.Function{Context: mailer.Context, Processor: mailer.Processor, Name: "audit"}
	waiting := circuit.Drain{Function: mailer, From: at(-time.Second).UnixMilli(), Probes: 2, Progress: rollout.Progress{Phase: circuit.DrainWaiting}}
	done := circuit.Drain{Function: mailer, From: at(-time.Second).UnixMilli(), To: at(30 * time.Second).UnixMilli(), Probes: 3,
		Progress: rollout.Progress{Phase: circuit.DrainDone, Released: 5, Succeeded: 5}}
	otherWaiting := waiting
	otherWaiting.Function = other
	changed := func(d circuit.Drain, change func(*circuit.Drain)) []byte {
		change(&d)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[circuit.Drain]{
		Spec: circuit.DrainSpec("drains", 1), Codec: circuit.DrainCodec, Now: func() time.Time { return at(time.Minute) },
		Samples: []kvstoretest.Sample[circuit.Drain]{
			{Key: mailer.String(), Value: waiting}, {Key: mailer.String(), Value: done}, {Key: other.String(), Value: otherWaiting},
		},
		Bad: []kvstoretest.Bad{
			{Name: "another function's drain", Key: other.String(), Value: changed(waiting, func(*circuit.Drain) {}), Field: "function"},
			{Name: "from the future", Key: mailer.String(), Value: changed(waiting, func(d *circuit.Drain) { d.From = at(time.Hour).UnixMilli() }), Field: "from"},
			{Name: "an unknown phase", Key: mailer.String(), Value: changed(done, func(d *circuit.Drain) { d.Phase = "dozing" }), Field: "phase"},
			{Name: "a key of two names", Key: "shop.Mailer", Value: changed(waiting, func(*circuit.Drain) {}), Field: "key"},
		},
	})
}
