package notify

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzParseConfig: any bytes give a config or an error wrapping
// ErrInvalidConfig, never a panic, and an error never shows the secret.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S"}]}], "rules": [{"events": ["created"]}], "digest": {"interval": "1h"}}`))
	f.Add([]byte(`{"endpoints": [{"name": "a", "url": "http://[::1]:80/x?y", "secrets": [{"env": "S"}, {"env": "S"}], "successStatus": [200, 204], "timeout": "5s"}], "dedupWindow": "0s"}`))
	f.Add([]byte(`{"endpoints": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, func(string) (string, bool) { return goodSecret, true })
		if err != nil {
			if strings.Contains(err.Error(), goodSecret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
			return
		}
		if len(c.Endpoints) == 0 || c.DedupWindow == nil || len(c.Rules) == 0 {
			t.Fatalf("an accepted config lacks its defaults: %+v", c)
		}
	})
}

// FuzzVerify: any headers and body verify or fail with ErrBadSignature.
func FuzzVerify(f *testing.F) {
	f.Add("sha256=00, sha256=11", "1700000000", "e1", "abc", []byte("{}"))
	f.Add(strings.Repeat(",", 100), "-1", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, sig, ts, id, hash string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderEventID, id)
		h.Set(HeaderBodySHA256, hash)
		if err := Verify("POST", "/", "", h, body, [][]byte{[]byte(goodSecret)}, time.Unix(1_700_000_000, 0), 0); err == nil {
			t.Fatalf("a forged request verified: %v", h)
		}
	})
}

// FuzzBatchNote: any batch bucket entry gives a notification, nothing, or
// an error; never a panic.
func FuzzBatchNote(f *testing.F) {
	f.Add(batchSubject+"b_1", []byte(`{"result": {"command": "prepare_compensation", "requestId": "r", "matched": 1, "counts": {"applied": 1}, "complete": true}}`), "")
	f.Add(batchSubject+"k_1", []byte(`{}`), "DEL")
	f.Fuzz(func(t *testing.T, subject string, data []byte, op string) {
		n, ok, err := batchNote(subject, data, op, 1, 1)
		if ok && (err != nil || n == nil || n.Batch == nil) {
			t.Fatalf("ok with err %v, note %v", err, n)
		}
	})
}
