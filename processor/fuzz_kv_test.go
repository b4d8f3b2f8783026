package processor_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/processor"
)

var fuzzNow = time.UnixMilli(1_800_000_000_000)

// FuzzDecodeHold: any key and value decode to a hold or an error, never a
// panic; an accepted hold is under its own key, holds events after its
// head in order and none twice, carries no claim ending beyond a day, and
// reads back once written again.
func FuzzDecodeHold(f *testing.F) {
	key := processor.HoldKey("shop", "Projector", "onStep", "order", "o-1")
	f.Add(key, []byte(`{"context":"shop","processor":"Projector","function":"onStep","aggregateType":"order","aggregateId":"o-1","head":{"record":"r","eventId":"e1","version":1,"seq":3,"since":1},"held":[{"eventId":"e2","version":2,"seq":4,"heldAt":2}]}`))
	f.Add(key, []byte(`{"context":"shop","processor":"Projector","function":"onStep","aggregateType":"order","aggregateId":"o-1","head":{"record":"r","eventId":"e1","version":1,"since":1},"releasing":true,"claim":{"owner":"ghost","until":9000000000000000}}`))
	f.Add(key, []byte(`{"context":"shop","processor":"Projector","function":"onStep","aggregateType":"order","aggregateId":"o-1","head":{"since":1},"recovered":{"revision":3,"reason":"x","at":1}}`))
	f.Add(key, []byte(`{}`))
	f.Add("....", []byte(`{}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		h, err := processor.DecodeHold(key, value, fuzzNow)
		if err != nil {
			return
		}
		if h.Key() != key {
			t.Fatalf("accepted hold %s under key %s", h.Key(), key)
		}
		if h.Claim != nil && h.Claim.Until > fuzzNow.Add(24*time.Hour).UnixMilli() {
			t.Fatalf("accepted claim until %d", h.Claim.Until)
		}
		for i := 1; i < len(h.Held); i++ {
			if h.Held[i].Version < h.Held[i-1].Version {
				t.Fatal("held events out of order")
			}
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := processor.DecodeHold(key, b, fuzzNow); err != nil {
			t.Fatalf("an accepted hold does not read back: %v", err)
		}
	})
}

// FuzzDecodeBuildEntry: any key and value decode to a registry entry or
// an error, never a panic; an accepted one is under its own key and reads
// back.
func FuzzDecodeBuildEntry(f *testing.F) {
	f.Add("c2hvcA.TWFpbGVy.aTE", []byte(`{"context":"shop","processor":"Mailer","instance":"i1","build":{"version":"v1"},"startedAt":1,"heartbeatAt":2}`))
	f.Add("b-ü", []byte(`{}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		e, err := processor.DecodeBuildEntry(key, value, fuzzNow)
		if err != nil {
			return
		}
		b, _ := json.Marshal(e)
		if _, err := processor.DecodeBuildEntry(key, b, fuzzNow); err != nil {
			t.Fatalf("an accepted entry does not read back: %v", err)
		}
	})
}

// FuzzDecodeReplay: any key and value decode to a range replay or an
// error, never a panic; an accepted one is valid (ValidateReplay), its
// next in its range, and reads back.
func FuzzDecodeReplay(f *testing.F) {
	f.Add("r-1", []byte(`{"id":"r-1","context":"shop","processor":"P","function":"f","fromSeq":1,"toSeq":10,"actor":"a","reason":"x","created":1,"status":"PENDING","next":1,"rate":100}`))
	f.Add("r-2", []byte(`{"id":"r-2","context":"shop","processor":"P","function":"f","aggregateType":"order","aggregateId":"o","fromVersion":1,"toVersion":3,"actor":"a","reason":"x","status":"RUNNING","next":4,"claim":{"owner":"o","until":9000000000000000}}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		r, err := processor.DecodeReplay(key, value, fuzzNow)
		if err != nil {
			return
		}
		if err := processor.ValidateReplay(&r); err != nil {
			t.Fatalf("accepted an invalid replay: %v", err)
		}
		if r.Next < r.First() || r.Next > r.Last()+1 {
			t.Fatalf("next %d outside %d..%d", r.Next, r.First(), r.Last())
		}
		b, _ := json.Marshal(r)
		if _, err := processor.DecodeReplay(key, b, fuzzNow); err != nil {
			t.Fatalf("an accepted replay does not read back: %v", err)
		}
	})
}

// FuzzDecodeSnapshot: any key and value decode to a snapshot or an error,
// never a panic; an accepted one reads back.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add("shop.order.o-1", []byte(`{"version":3,"seq":9,"state":{"n":1}}`))
	f.Add("shop.order.o-1", []byte(`{"version":0,"state":null}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		s, err := processor.DecodeSnapshot(key, value)
		if err != nil {
			return
		}
		if s.Version < 1 {
			t.Fatal("accepted version 0")
		}
		b, _ := json.Marshal(s)
		if _, err := processor.DecodeSnapshot(key, b); err != nil {
			t.Fatalf("an accepted snapshot does not read back: %v", err)
		}
	})
}
