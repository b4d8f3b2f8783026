package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// independentSign is the scheme written out again, without the package's
// helpers.
func independentSign(secret, method, path, query, ts, eventID string, body []byte) string {
	sum := sha256.Sum256(body)
	msg := method + "\n" + path + "\n" + query + "\n" + ts + "\n" + eventID + "\n" + hex.EncodeToString(sum[:])
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func signedRequest(t *testing.T, secrets [][]byte, body []byte, now time.Time) *http.Request {
	t.Helper()
	u, err := url.Parse("https://hooks.example.com/a%20b/c?x=1&y=two")
	require.NoError(t, err)
	req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}
	signRequest(req, body, "evt-1", secrets, now)
	return req
}

func TestSignatureMatchesAnIndependentImplementation(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	body := []byte(`{"hello":"world"}`)
	a, b := []byte("first-secret-0123456789"), []byte("second-secret-0123456789")
	req := signedRequest(t, [][]byte{a, b}, body, now)

	ts := strconv.FormatInt(now.Unix(), 10)
	want := independentSign(string(a), "POST", "/a%20b/c", "x=1&y=two", ts, "evt-1", body) + ", " +
		independentSign(string(b), "POST", "/a%20b/c", "x=1&y=two", ts, "evt-1", body)
	assert.Equal(t, want, req.Header.Get(HeaderSignature), "both signatures, byte for byte")
	sum := sha256.Sum256(body)
	assert.Equal(t, hex.EncodeToString(sum[:]), req.Header.Get(HeaderBodySHA256))
	assert.Equal(t, ts, req.Header.Get(HeaderTimestamp))
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	body := []byte(`{"n":1}`)
	secret := []byte("the-secret-0123456789")
	req := signedRequest(t, [][]byte{secret}, body, now)
	verify := func(h http.Header, body []byte, secrets [][]byte, at time.Time) error {
		return Verify("POST", "/a%20b/c", "x=1&y=two", h, body, secrets, at, 0)
	}
	require.NoError(t, verify(req.Header, body, [][]byte{secret}, now))
	require.NoError(t, verify(req.Header, body, [][]byte{[]byte("old-secret-0123456789"), secret}, now.Add(4*time.Minute)), "either active secret verifies")

	for name, tc := range map[string]struct {
		mutate func(http.Header) ([]byte, [][]byte, time.Time)
		want   string
	}{
		"wrong secret": {func(http.Header) ([]byte, [][]byte, time.Time) {
			return body, [][]byte{[]byte("wrong-secret-0123456789")}, now
		}, "no signature"},
		"stale timestamp": {func(http.Header) ([]byte, [][]byte, time.Time) {
			return body, [][]byte{secret}, now.Add(6 * time.Minute)
		}, "beyond the tolerance of 5m0s"},
		"changed body": {func(http.Header) ([]byte, [][]byte, time.Time) {
			return []byte(`{"n":2}`), [][]byte{secret}, now
		}, "the body was changed"},
		"changed body and hash": {func(h http.Header) ([]byte, [][]byte, time.Time) {
			h.Set(HeaderBodySHA256, BodyHash([]byte(`{"n":2}`)))
			return []byte(`{"n":2}`), [][]byte{secret}, now
		}, "no signature"},
		"changed event id": {func(h http.Header) ([]byte, [][]byte, time.Time) {
			h.Set(HeaderEventID, "evt-2")
			return body, [][]byte{secret}, now
		}, "no signature"},
		"changed timestamp": {func(h http.Header) ([]byte, [][]byte, time.Time) {
			h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix()+1, 10))
			return body, [][]byte{secret}, now
		}, "no signature"},
	} {
		t.Run(name, func(t *testing.T) {
			h := req.Header.Clone()
			b, s, at := tc.mutate(h)
			err := verify(h, b, s, at)
			require.ErrorIs(t, err, ErrBadSignature)
			assert.Contains(t, err.Error(), tc.want)
			for _, sec := range s {
				assert.NotContains(t, err.Error(), string(sec), "an error never shows a secret")
			}
		})
	}
	err := Verify("POST", "/other", "x=1&y=two", req.Header, body, [][]byte{secret}, now, 0)
	require.ErrorIs(t, err, ErrBadSignature, "a changed path fails")
	err = Verify("POST", "/a%20b/c", "x=1", req.Header, body, [][]byte{secret}, now, 0)
	require.ErrorIs(t, err, ErrBadSignature, "a changed query fails")
	assert.True(t, strings.HasPrefix(Sign(secret, "POST", "/", "", 1, "e", "h"), "sha256="))
}
