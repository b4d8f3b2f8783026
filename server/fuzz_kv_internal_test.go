package server

import (
	"testing"
	"time"

	"github.com/amends-dev/amends/kvstore"
)

// FuzzDecodeBatchEntry: any key and value decode to a batch or an
// Idempotency-Key entry or an error, never a panic; an accepted entry
// reads back.
func FuzzDecodeBatchEntry(f *testing.F) {
	f.Add(batchKey("r-1"), []byte(`{"running":true,"bodyHash":"h","startedAt":1}`))
	f.Add(batchKey("r-1"), []byte(`{"bodyHash":"h","startedAt":1,"result":{"command":"prepare_compensation","matched":1,"counts":{"applied":1},"records":[{"id":"a","outcome":"applied"}],"complete":true}}`))
	f.Add(idempotencyKey("k"), []byte(`{"hash":"h","at":1}`))
	f.Add("b_x", []byte(`{}`))
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		e, err := decodeBatchEntry(kvstore.Entry{Key: key, Value: value, Now: now})
		if err != nil {
			return
		}
		if (e.batch == nil) == (e.key == nil) {
			t.Fatalf("an entry is a batch or a key: %+v", e)
		}
		b, err := batchCodec.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeBatchEntry(kvstore.Entry{Key: key, Value: b, Now: now}); err != nil {
			t.Fatalf("an accepted entry does not read back: %v", err)
		}
	})
}
