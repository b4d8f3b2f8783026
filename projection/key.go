package projection

import (
	"fmt"
	"unicode/utf8"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/token"
)

// viewKeys encodes record ids as KV keys: '=' starts an encoded one ('~'
// is not allowed in keys).
var viewKeys = token.Codec{Mark: '='}

// EncodeKey returns the KV key of record id. Ids made only of
// [A-Za-z0-9_-] (record ids are UUIDs) are used as they are; any other id
// becomes '=' followed by its unpadded base64url encoding, which only uses
// characters KV keys allow. The mapping is reversible and injective. An
// id that is not a record id (see CheckID) is an error matching
// ErrInvalidQuery.
func EncodeKey(id string) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	key, err := viewKeys.Encode(id)
	if err != nil {
		return "", fmt.Errorf("record id is empty: %w", ErrInvalidQuery)
	}
	return key, nil
}

// CheckID reports whether id can be a record id: 1 to
// eventstore.MaxIDLength bytes of UTF-8 text without control characters,
// the rule every aggregate id of the event store follows. The error
// matches ErrInvalidQuery and says which rule id breaks. Get, GetView and
// History check it before they send anything to NATS.
func CheckID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("record id is empty; it must be 1 to %d bytes of UTF-8 text: %w", eventstore.MaxIDLength, ErrInvalidQuery)
	case len(id) > eventstore.MaxIDLength:
		return fmt.Errorf("record id is %d bytes, over the limit of %d: %w", len(id), eventstore.MaxIDLength, ErrInvalidQuery)
	case !utf8.ValidString(id):
		return fmt.Errorf("record id %q is not valid UTF-8: %w", id, ErrInvalidQuery)
	}
	for i, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("record id %q has the control character %U at byte %d: %w", id, r, i, ErrInvalidQuery)
		}
	}
	return nil
}

// DecodeKey reverses EncodeKey. A key EncodeKey cannot produce is an error
// matching ErrCorruptView.
func DecodeKey(key string) (string, error) {
	id, err := viewKeys.Decode(key)
	if err != nil {
		return "", fmt.Errorf("view key: %v: %w", err, ErrCorruptView)
	}
	if CheckID(id) != nil {
		return "", fmt.Errorf("view key %.40q... holds an id that cannot be a record id: %w", key, ErrCorruptView)
	}
	return id, nil
}
