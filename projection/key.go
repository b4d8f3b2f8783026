package projection

import (
	"encoding/base64"
	"fmt"
)

// encodedKeyMark starts a key that holds base64url of the record id. Ids
// that start with it are always encoded, so every key decodes to one id.
const encodedKeyMark = '='

// EncodeKey returns the KV key of record id. Ids made only of
// [A-Za-z0-9_-] (record ids are UUIDs) are used as they are; any other id
// becomes '=' followed by its unpadded base64url encoding, which only uses
// characters KV keys allow. The mapping is reversible and injective. An
// empty id is an error matching ErrInvalidQuery.
func EncodeKey(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("record id is empty: %w", ErrInvalidQuery)
	}
	if isPlainKey(id) {
		return id, nil
	}
	return string(encodedKeyMark) + base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// DecodeKey reverses EncodeKey. A key EncodeKey cannot produce is an error
// matching ErrCorruptView.
func DecodeKey(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("view key is empty: %w", ErrCorruptView)
	}
	if key[0] != encodedKeyMark {
		if !isPlainKey(key) {
			return "", fmt.Errorf("view key %q is neither plain nor encoded: %w", key, ErrCorruptView)
		}
		return key, nil
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(key[1:])
	if err != nil {
		return "", fmt.Errorf("view key %q: %v: %w", key, err, ErrCorruptView)
	}
	id := string(raw)
	if id == "" || isPlainKey(id) {
		return "", fmt.Errorf("view key %q is not the canonical encoding of %q: %w", key, id, ErrCorruptView)
	}
	return id, nil
}

func isPlainKey(s string) bool {
	if s == "" || s[0] == encodedKeyMark {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
