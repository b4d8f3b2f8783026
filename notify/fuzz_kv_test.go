package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/kvstore"
)

var fuzzNow = time.UnixMilli(1_800_000_000_000)

// FuzzDecodeClaim: any key and value decode to a dedup claim or an error,
// never a panic; an accepted claim is never after now by more than the
// skew (a later one is treated as absent), and reads back.
func FuzzDecodeClaim(f *testing.F) {
	key := dedupKey("ops", "created:x")
	f.Add(key, []byte(`{"event":"n-1","at":1700000000000}`))
	f.Add(key, []byte(`{"event":"n-1","at":9000000000000000}`))
	f.Add(key, []byte(`{"event":"n-1","at":1,"delivered":true}`))
	f.Add("d_x", []byte(`{}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		c, err := decodeClaim(kvstore.Entry{Bucket: DefaultDedupBucket, Key: key, Value: value, Now: fuzzNow})
		if err != nil {
			return
		}
		if c.At > fuzzNow.Add(maxSkew).UnixMilli() || c.At < 0 {
			t.Fatalf("accepted a claim at %d", c.At)
		}
		if c.Event == "" {
			return // an ignored claim: absent
		}
		b, _ := json.Marshal(c)
		if _, err := decodeClaim(kvstore.Entry{Key: key, Value: b, Now: fuzzNow}); err != nil {
			t.Fatalf("an accepted claim does not read back: %v", err)
		}
	})
}

// FuzzDecodeDigest: any key and value decode to a digest entry or an
// error, never a panic; the meta entry's time is never after now by more
// than the skew, and an accepted entry reads back.
func FuzzDecodeDigest(f *testing.F) {
	f.Add(digestMeta, []byte(`{"last":1700000000000}`))
	f.Add(digestMeta, []byte(`{"last":9000000000000000}`))
	f.Add(groupKey("shop/p/f", "E"), []byte(`{"function":"shop/p/f","errorCode":"E","failures":2,"status":"failing"}`))
	f.Add("g_nothex", []byte(`{}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		d, err := decodeDigest(kvstore.Entry{Key: key, Value: value, Now: fuzzNow})
		if err != nil {
			return
		}
		if d.meta != nil && d.meta.Last > fuzzNow.Add(maxSkew).UnixMilli() {
			t.Fatalf("accepted a last digest at %d", d.meta.Last)
		}
		b, err := digestCodec.Encode(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeDigest(kvstore.Entry{Key: key, Value: b, Now: fuzzNow}); err != nil {
			t.Fatalf("an accepted entry does not read back: %v", err)
		}
	})
}
