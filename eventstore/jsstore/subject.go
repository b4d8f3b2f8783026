package jsstore

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/amends-dev/amends/eventstore"
)

// encodedMark starts an id token that holds base64url of the id. Raw ids that
// start with it are always encoded, so every token decodes to one id.
const encodedMark = '~'

// EncodeID returns the subject token for an aggregate id. Ids made only of
// [A-Za-z0-9_-] are used as they are; any other id (dots, spaces, '*', '>',
// unicode, a leading '~') becomes '~' followed by its unpadded base64url
// encoding. The mapping is reversible and injective. An empty id is an
// error matching eventstore.ErrInvalid.
func EncodeID(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("aggregate id is empty: %w", eventstore.ErrInvalid)
	}
	if isPlainToken(id) {
		return id, nil
	}
	return string(encodedMark) + base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// DecodeID reverses EncodeID. A token that EncodeID cannot produce is an
// error matching eventstore.ErrInvalid.
func DecodeID(token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("subject token is empty: %w", eventstore.ErrInvalid)
	}
	if token[0] != encodedMark {
		if !isPlainToken(token) {
			return "", fmt.Errorf("subject token %q is neither plain nor encoded: %w", token, eventstore.ErrInvalid)
		}
		return token, nil
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token[1:])
	if err != nil {
		return "", fmt.Errorf("subject token %q: %v: %w", token, err, eventstore.ErrInvalid)
	}
	id := string(raw)
	// A canonical encoding only exists for ids that need one.
	if id == "" || isPlainToken(id) {
		return "", fmt.Errorf("subject token %q is not the canonical encoding of %q: %w", token, id, eventstore.ErrInvalid)
	}
	return id, nil
}

func isPlainToken(s string) bool {
	if s == "" || s[0] == encodedMark {
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

// parseSubject reverses subject for a known prefix.
func parseSubject(prefix, subj string) (eventstore.AggregateID, error) {
	rest, ok := strings.CutPrefix(subj, prefix+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return eventstore.AggregateID{}, fmt.Errorf("subject %q is not %s.<context>.<type>.<id>: %w", subj, prefix, eventstore.ErrInvalid)
	}
	id, err := DecodeID(parts[2])
	if err != nil {
		return eventstore.AggregateID{}, err
	}
	return eventstore.AggregateID{Context: parts[0], Type: parts[1], ID: id}, nil
}
