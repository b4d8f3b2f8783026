package projection

import (
	"fmt"

	"github.com/amends-dev/amends/internal/token"
)

// viewKeys encodes record ids as KV keys: '=' starts an encoded one ('~'
// is not allowed in keys).
var viewKeys = token.Codec{Mark: '='}

// EncodeKey returns the KV key of record id. Ids made only of
// [A-Za-z0-9_-] (record ids are UUIDs) are used as they are; any other id
// becomes '=' followed by its unpadded base64url encoding, which only uses
// characters KV keys allow. The mapping is reversible and injective. An
// empty id is an error matching ErrInvalidQuery.
func EncodeKey(id string) (string, error) {
	key, err := viewKeys.Encode(id)
	if err != nil {
		return "", fmt.Errorf("record id is empty: %w", ErrInvalidQuery)
	}
	return key, nil
}

// DecodeKey reverses EncodeKey. A key EncodeKey cannot produce is an error
// matching ErrCorruptView.
func DecodeKey(key string) (string, error) {
	id, err := viewKeys.Decode(key)
	if err != nil {
		return "", fmt.Errorf("view key: %v: %w", err, ErrCorruptView)
	}
	return id, nil
}
