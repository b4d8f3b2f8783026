package scheduler

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/kvstore"
)

// FuzzDecodeLease: any value decodes to a lease or an error, never a
// panic; an accepted lease reads back.
func FuzzDecodeLease(f *testing.F) {
	f.Add([]byte(`{"holder":"i-1","renewedAt":1700000000000}`))
	f.Add([]byte(`{"holder":"","renewedAt":9000000000000000}`))
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, value []byte) {
		v, err := leaseCodec.Decode(kvstore.Entry{Key: DefaultLeaseKey, Value: value, Now: now})
		if err != nil {
			return
		}
		b, _ := json.Marshal(v)
		if _, err := leaseCodec.Decode(kvstore.Entry{Key: DefaultLeaseKey, Value: b, Now: now}); err != nil {
			t.Fatalf("an accepted lease does not read back: %v", err)
		}
	})
}
