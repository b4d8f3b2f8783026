package rules_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amends-dev/amends/rules"
)

// FuzzDecodeStored: any key and value decode to a rule or an error, never
// a panic; a rule it accepts passes the checks it claims (a valid id that
// is the key, Validate at its creation), and reads back the same once
// written again.
func FuzzDecodeStored(f *testing.F) {
	f.Add("r-0123456789ab", []byte(`{"id":"r-0123456789ab","match":{"functionContext":"shop","processor":"p","function":"f","errorCode":"E"},"action":"WAIVE","reason":"x","actor":"a","createdAt":1}`))
	f.Add("r-0123456789ab", []byte(`{"id":"r-0123456789ab","match":{"fingerprint":"fp1-00000000000000aa"},"action":"APPLY_RETRY_SPEC","retrySpec":{"maxRetries":3,"minBackoff":1,"executionTimeout":1},"reason":"x","createdAt":5,"expiresAt":9,"audit":[{"op":"add","actor":"a","at":5}]}`))
	f.Add("r-0123456789ab", []byte(`{"id":"r-0123456789ab","action":"APPLY_RETRY_SPEC","retrySpec":{"maxRetries":-5}}`))
	f.Add("r-ü", []byte(`{}`))
	f.Add("r-0123456789ab", []byte(`{"id":"r-0123456789ab","createdAt":9000000000000000}`))
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		r, err := rules.DecodeStored(key, value, now)
		if err != nil {
			return
		}
		if !rules.ValidID(r.ID) || r.ID != key {
			t.Fatalf("accepted rule %q under key %q", r.ID, key)
		}
		if r.Action == rules.ApplyRetrySpec && r.RetrySpec == nil {
			t.Fatal("accepted an APPLY_RETRY_SPEC rule without its spec")
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rules.DecodeStored(key, b, now); err != nil {
			t.Fatalf("an accepted rule does not read back: %v", err)
		}
	})
}
