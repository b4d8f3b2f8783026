package jsstore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/eventstore/jsstore"
)

// FuzzDecodeSkip: any key and value decode to a skip or an error, never a
// panic; an accepted skip names a message after the one loaders read in
// its place, and reads back.
func FuzzDecodeSkip(f *testing.F) {
	f.Add("QU1FTkRTX29yZGVycw.3", []byte(`{"stream":"AMENDS_orders","seq":3,"subject":"amends.orders.order.o-1","prev":2,"actor":"a","reason":"r","at":1}`))
	f.Add("x.1", []byte(`{"stream":"x","seq":1,"prev":1}`))
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		sk, err := jsstore.DecodeSkip(key, value, now)
		if err != nil {
			return
		}
		if sk.Prev >= sk.Seq || sk.Seq == 0 {
			t.Fatalf("accepted prev %d for seq %d", sk.Prev, sk.Seq)
		}
		b, _ := json.Marshal(sk)
		if _, err := jsstore.DecodeSkip(key, b, now); err != nil {
			t.Fatalf("an accepted skip does not read back: %v", err)
		}
	})
}
