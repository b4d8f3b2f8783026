// Package token encodes arbitrary ids as tokens made of [A-Za-z0-9_-]
// plus one mark character, reversibly and injectively: the subject tokens
// of the event store and the keys of the views bucket.
package token

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// Codec encodes ids that are not plain tokens as Mark followed by their
// unpadded base64url encoding. Ids made only of [A-Za-z0-9_-] that do not
// start with Mark are used as they are; any other id is encoded, so every
// token decodes to one id.
type Codec struct {
	// Mark starts an encoded token; it must not be in [A-Za-z0-9_-].
	Mark byte
}

// ErrEmpty: the id or token is empty.
var ErrEmpty = errors.New("empty")

// Encode returns the token of id, or ErrEmpty.
func (c Codec) Encode(id string) (string, error) {
	if id == "" {
		return "", ErrEmpty
	}
	if c.plain(id) {
		return id, nil
	}
	return string(c.Mark) + base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// Decode reverses Encode. A token Encode cannot produce is an error that
// says why.
func (c Codec) Decode(tok string) (string, error) {
	if tok == "" {
		return "", ErrEmpty
	}
	if tok[0] != c.Mark {
		if !c.plain(tok) {
			return "", fmt.Errorf("%q is neither plain nor encoded", tok)
		}
		return tok, nil
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(tok[1:])
	if err != nil {
		return "", fmt.Errorf("%q: %v", tok, err)
	}
	id := string(raw)
	if id == "" || c.plain(id) {
		return "", fmt.Errorf("%q is not the canonical encoding of %q", tok, id)
	}
	return id, nil
}

// plain reports whether s is used as its own token.
func (c Codec) plain(s string) bool {
	if s == "" || s[0] == c.Mark {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			return false
		}
	}
	return true
}
