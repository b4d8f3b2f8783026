package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a notification request (see docs/notifications.md).
const (
	HeaderEventID       = "Amends-Event-Id"
	HeaderEventType     = "Amends-Event-Type"
	HeaderRecordID      = "Amends-Record-Id"
	HeaderAggregateType = "Amends-Aggregate-Type"
	HeaderAggregateID   = "Amends-Aggregate-Id"
	HeaderTraceID       = "Amends-Trace-Id"
	HeaderTimestamp     = "Amends-Timestamp"
	HeaderBodySHA256    = "Amends-Body-Sha256"
	HeaderSignature     = "Amends-Signature"
)

// DefaultTolerance is how far a request's timestamp may be from the
// verifier's clock.
const DefaultTolerance = 5 * time.Minute

// BodyHash returns the lowercase hex SHA-256 of body.
func BodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// SigningString returns what is signed: the method, the escaped path, the
// raw query (without "?"), the timestamp in Unix seconds, the event id and
// the body's hex SHA-256, each followed by a newline except the last.
func SigningString(method, path, query string, timestamp int64, eventID, bodyHash string) string {
	return strings.Join([]string{method, path, query, strconv.FormatInt(timestamp, 10), eventID, bodyHash}, "\n")
}

// Sign returns "sha256=<hex>" of HMAC-SHA256 over SigningString with secret.
func Sign(secret []byte, method, path, query string, timestamp int64, eventID, bodyHash string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(SigningString(method, path, query, timestamp, eventID, bodyHash)))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// signRequest sets the timestamp, body hash and signature headers of req,
// one signature per secret, comma-separated. The body hash and event id
// headers must describe body.
func signRequest(req *http.Request, body []byte, eventID string, secrets [][]byte, now time.Time) {
	ts := now.Unix()
	hash := BodyHash(body)
	req.Header.Set(HeaderEventID, eventID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderBodySHA256, hash)
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sigs = append(sigs, Sign(s, req.Method, req.URL.EscapedPath(), req.URL.RawQuery, ts, eventID, hash))
	}
	req.Header.Set(HeaderSignature, strings.Join(sigs, ", "))
}

// maxSignatures bounds the signatures a verifier looks at.
const maxSignatures = 8

// Verify checks a received request: its body hashes to the
// Amends-Body-Sha256 header, its Amends-Timestamp is within tolerance of
// now (<= 0: DefaultTolerance), and one of the signatures in
// Amends-Signature is the HMAC of the request with one of secrets. path is
// the escaped path and query the raw query the request was sent to. It
// returns nil or an error wrapping ErrBadSignature that says which check
// failed; the error never contains a secret. Comparisons are constant-time.
func Verify(method, path, query string, h http.Header, body []byte, secrets [][]byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if len(secrets) == 0 {
		return fmt.Errorf("no secret to verify with: %w", ErrBadSignature)
	}
	hash := BodyHash(body)
	if got := h.Get(HeaderBodySHA256); !hmac.Equal([]byte(strings.ToLower(got)), []byte(hash)) {
		return fmt.Errorf("the body's SHA-256 is %s, but %s says %q: the body was changed: %w", hash, HeaderBodySHA256, clip(got, 64), ErrBadSignature)
	}
	raw := h.Get(HeaderTimestamp)
	ts, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return fmt.Errorf("%s %q is not Unix seconds: %w", HeaderTimestamp, clip(raw, 32), ErrBadSignature)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%s %d is %s from now, beyond the tolerance of %s: a stale or replayed request: %w", HeaderTimestamp, ts, skew.Round(time.Second), tolerance, ErrBadSignature)
	}
	eventID := h.Get(HeaderEventID)
	sigs := strings.Split(h.Get(HeaderSignature), ",")
	if len(sigs) > maxSignatures {
		return fmt.Errorf("%s has %d signatures, more than %d: %w", HeaderSignature, len(sigs), maxSignatures, ErrBadSignature)
	}
	ok := false
	for _, s := range secrets {
		want := []byte(Sign(s, method, path, query, ts, eventID, hash))
		for _, got := range sigs {
			if hmac.Equal([]byte(strings.TrimSpace(got)), want) {
				ok = true // keep going: the time does not depend on which matched
			}
		}
	}
	if !ok {
		return fmt.Errorf("no signature in %s matches a secret (wrong secret, or the method, path, query, timestamp or event id changed): %w", HeaderSignature, ErrBadSignature)
	}
	return nil
}

// VerifyRequest is Verify on a received *http.Request whose body has been
// read into body.
func VerifyRequest(r *http.Request, body []byte, secrets [][]byte, now time.Time, tolerance time.Duration) error {
	return Verify(r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header, body, secrets, now, tolerance)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
