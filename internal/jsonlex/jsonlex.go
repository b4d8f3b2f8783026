// Package jsonlex holds the pieces of JSON lexing that amends' hand-written
// decoders share (eventstore's canonical stream decoder, projection's view
// decoder).
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
