package jsstore

import (
	"fmt"
	"strings"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/token"
)

// subjectIDs encodes ids as subject tokens: '~' starts an encoded one.
var subjectIDs = token.Codec{Mark: '~'}

// EncodeID returns the subject token for an aggregate id. Ids made only of
// [A-Za-z0-9_-] are used as they are; any other id (dots, spaces, '*', '>',
// unicode, a leading '~') becomes '~' followed by its unpadded base64url
// encoding. The mapping is reversible and injective. An empty id is an
// error matching eventstore.ErrInvalid.
func EncodeID(id string) (string, error) {
	tok, err := subjectIDs.Encode(id)
	if err != nil {
		return "", fmt.Errorf("aggregate id is empty: %w", eventstore.ErrInvalid)
	}
	return tok, nil
}

// DecodeID reverses EncodeID. A token that EncodeID cannot produce is an
// error matching eventstore.ErrInvalid.
func DecodeID(tok string) (string, error) {
	id, err := subjectIDs.Decode(tok)
	if err != nil {
		return "", fmt.Errorf("subject token: %v: %w", err, eventstore.ErrInvalid)
	}
	return id, nil
}

// MaxSubjectLength is the longest subject the store sends, in bytes. A
// NATS server refuses a protocol line over 4096 bytes by closing the
// connection, and a direct get puts the API prefix and the stream name in
// front of the subject; with the limits on ids, names and prefixes, every
// valid aggregate's subject is far below it. The store checks it anyway
// before it sends anything.
const MaxSubjectLength = 1024

// subject returns "<prefix>.<context>.<type>.<encoded id>". A subject over
// MaxSubjectLength, or an id that cannot be encoded, is an error matching
// eventstore.ErrInvalid.
func subject(prefix string, a eventstore.AggregateID) (string, error) {
	tok, err := EncodeID(a.ID)
	if err != nil {
		return "", err
	}
	if n := len(prefix) + len(a.Context) + len(a.Type) + len(tok) + 3; n > MaxSubjectLength {
		return "", fmt.Errorf("the subject of %.80s... would be %d bytes, over the limit of %d: %w", a.String(), n, MaxSubjectLength, eventstore.ErrInvalid)
	}
	var b strings.Builder
	b.Grow(len(prefix) + len(a.Context) + len(a.Type) + len(tok) + 3)
	b.WriteString(prefix)
	b.WriteByte('.')
	b.WriteString(a.Context)
	b.WriteByte('.')
	b.WriteString(a.Type)
	b.WriteByte('.')
	b.WriteString(tok)
	return b.String(), nil
}
