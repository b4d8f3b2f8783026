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

// subject returns "<prefix>.<context>.<type>.<encoded id>".
func subject(prefix string, a eventstore.AggregateID) (string, error) {
	tok, err := EncodeID(a.ID)
	if err != nil {
		return "", err
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
