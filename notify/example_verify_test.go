package notify_test

// The receiver-side verifier of docs/notifications.md, kept here so that it
// compiles and is checked against the signer. It uses only the standard
// library: a receiver does not import amends.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/notify"
)

// verifyWebhook checks an amends notification: the body's hash, the
// timestamp (at most 5 minutes off) and one signature made with secret.
// It returns the body.
func verifyWebhook(r *http.Request, secret []byte, now time.Time) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if !hmac.Equal([]byte(hash), []byte(r.Header.Get("Amends-Body-Sha256"))) {
		return nil, errors.New("body hash mismatch")
	}
	ts, err := strconv.ParseInt(r.Header.Get("Amends-Timestamp"), 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return nil, errors.New("stale or missing timestamp")
	}
	signed := strings.Join([]string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery,
		r.Header.Get("Amends-Timestamp"), r.Header.Get("Amends-Event-Id"), hash}, "\n")
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signed))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	for _, got := range strings.Split(r.Header.Get("Amends-Signature"), ",") {
		if hmac.Equal([]byte(strings.TrimSpace(got)), []byte(want)) {
			return body, nil
		}
	}
	return nil, errors.New("no valid signature")
}

func Example_verifyWebhook() {
	secret := []byte("0123456789abcdef-example")
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"n1","type":"created"}`)
	// What amends sends (built here with the signer).
	hash := notify.BodyHash(body)
	r := httptest.NewRequest(http.MethodPost, "/hooks/amends?team=ops", bytes.NewReader(body))
	r.Header.Set("Amends-Event-Id", "n1")
	r.Header.Set("Amends-Timestamp", strconv.FormatInt(now.Unix(), 10))
	r.Header.Set("Amends-Body-Sha256", hash)
	r.Header.Set("Amends-Signature", notify.Sign(secret, "POST", "/hooks/amends", "team=ops", now.Unix(), "n1", hash))

	_, err := verifyWebhook(r, secret, now)
	fmt.Println("verified:", err == nil)
	// Output: verified: true
}
