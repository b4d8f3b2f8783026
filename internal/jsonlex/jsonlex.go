// Package jsonlex is amends' one JSON scanner and its one writer of
// encoding/json's string and number forms, shared by the hand-written
// codecs of the stored formats: eventstore's stream document and
// projection's view.
//
// A Scanner reads a document in a layout its caller knows (members in a
// fixed order, no whitespace), as the fast path of a decoder whose
// fallback is a JSON library: every method consumes what it is asked for
// or reports false, and never takes what RFC 8259 and RFC 7493 refuse
// (invalid UTF-8, lone surrogate escapes, control characters in strings,
// duplicate names in a validated value). It may refuse valid input it
// does not take on; the caller then decodes with the library. It
// allocates nothing.
//
// AppendString and AppendFloat write what encoding/json writes for a
// string and a float64.
package jsonlex

// Hex4 reads the four hexadecimal digits of a \u escape at d[i:], either
// case; ok is false if there are not four.
func Hex4(d []byte, i int) (r rune, ok bool) {
	if i < 0 || i+4 > len(d) {
		return 0, false
	}
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// hexDigits are the lowercase hex digits.
const hexDigits = "0123456789abcdef"
