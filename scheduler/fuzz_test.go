package scheduler_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/scheduler"
)

// FuzzDecodeRelease: any key and value decode to a release or an error,
// never a panic; an accepted release has a step and a batch the
// scheduler can index, and reads back once written again.
func FuzzDecodeRelease(f *testing.F) {
	key := "c2hvcA.UHJvamVjdG9y" // shop, Projector
	f.Add(key, []byte(`{"context":"shop","processor":"Projector","build":{"version":"v1"},"phase":"steps","step":1,"startedAt":1,"batch":[{"id":"r1","attempt":1}]}`))
	f.Add(key, []byte(`{"context":"shop","processor":"Projector","build":{"version":"v1.0.0"},"phase":"steps","step":-1,"startedAt":1}`))
	f.Add(key, []byte(`{"context":"shop","processor":"Projector","build":{"version":"v1"},"phase":"halted","halt":"x","startedAt":1,"released":3,"succeeded":1,"failed":2}`))
	f.Add("odd", []byte(`{}`))
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		r, err := scheduler.DecodeParkRelease(key, value, now)
		if err != nil {
			return
		}
		if r.Step < 0 || r.Step > scheduler.MaxParkReleaseSteps || len(r.Batch) > scheduler.MaxReleaseBatch {
			t.Fatalf("accepted step %d with %d records", r.Step, len(r.Batch))
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scheduler.DecodeParkRelease(key, b, now); err != nil {
			t.Fatalf("an accepted release does not read back: %v", err)
		}
	})
}
