package kvstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/amends-dev/amends/internal/text"
)

// MaxKeyBytes bounds a key this package writes or accepts from a bucket.
const MaxKeyBytes = 1024

// ValidKey reports, as an error wrapping ErrInvalidKey, whether key is a
// key nats.go reads and writes: dot-separated non-empty tokens of
// [-/_=a-zA-Z0-9], at most MaxKeyBytes.
func ValidKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("the key is empty: %w", ErrInvalidKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("the key is %d bytes, over the limit of %d: %w", len(key), MaxKeyBytes, ErrInvalidKey)
	case key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, ".."):
		return fmt.Errorf("the key %s has an empty token: %w", Quote(key), ErrInvalidKey)
	}
	for i := 0; i < len(key); i++ {
		if !keyByte[key[i]] {
			return fmt.Errorf("the key %s has %s at byte %d; keys are made of [-/_=.a-zA-Z0-9]: %w", Quote(key), text.At(key, i), i, ErrInvalidKey)
		}
	}
	return nil
}

var segment = base64.RawURLEncoding

// Segment encodes any text as one key token: unpadded base64url, which
// uses only characters keys allow and no dot. The empty text is "_",
// which is no base64url encoding (one character encodes nothing), so that
// a key never has an empty token.
func Segment(s string) string {
	if s == "" {
		return "_"
	}
	return segment.EncodeToString([]byte(s))
}

// DecodeSegment reverses Segment; an error names the token.
func DecodeSegment(tok string) (string, error) {
	if tok == "_" {
		return "", nil
	}
	b, err := segment.DecodeString(tok)
	if err != nil || segment.EncodeToString(b) != tok {
		return "", fmt.Errorf("key token %s is not base64url", Quote(tok))
	}
	return string(b), nil
}

// Segments joins parts, each encoded with Segment, with dots.
func Segments(parts ...string) string {
	enc := make([]string, len(parts))
	for i, p := range parts {
		enc[i] = Segment(p)
	}
	return strings.Join(enc, ".")
}

// SplitSegments reverses Segments for a key of exactly n parts; the error
// says which token is wrong.
func SplitSegments(key string, n int) ([]string, error) {
	toks := strings.Split(key, ".")
	if len(toks) != n {
		return nil, fmt.Errorf("the key has %d dot-separated tokens, want %d", len(toks), n)
	}
	out := make([]string, n)
	for i, t := range toks {
		s, err := DecodeSegment(t)
		if err != nil {
			return nil, fmt.Errorf("token %d: %w", i+1, err)
		}
		out[i] = s
	}
	return out, nil
}

// hashBytes is how much of the SHA-256 a Hash key keeps: 160 bits.
const hashBytes = 20

// Hash returns prefix followed by the hex SHA-256 (first 20 bytes) of the
// parts joined with NUL bytes: a fixed-length key for any parts.
func Hash(prefix string, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return prefix + hex.EncodeToString(sum[:hashBytes])
}

// IsHash reports whether key has the shape Hash gives with prefix.
func IsHash(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || len(rest) != 2*hashBytes {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// keyByte tells the bytes a key may hold: [-/_=.a-zA-Z0-9].
var keyByte = func() (t [256]bool) {
	for _, c := range []byte("-/_=.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") {
		t[c] = true
	}
	return t
}()
