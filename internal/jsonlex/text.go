package jsonlex

import "unicode/utf8"

// Text is a string as a Scanner found it: its bytes between the quotes,
// already checked, and whether they hold escapes. A layout keeps the
// strings it may not need as Text and unescapes them only when asked.
// The zero Text is "".
type Text struct {
	raw     []byte
	escaped bool
	n       int // the length of the value StringInto appended
}

// Raw returns the string as written, between its quotes.
func (t Text) Raw() []byte { return t.raw }

// Escaped reports whether the string holds escapes (else Raw is its
// value).
func (t Text) Escaped() bool { return t.escaped }

// AppendTo appends the string's value to b.
func (t Text) AppendTo(b []byte) []byte {
	if !t.escaped {
		return append(b, t.raw...)
	}
	d, copied := t.raw, 0
	for j := 0; j < len(d); {
		if d[j] != '\\' {
			j++
			continue
		}
		r, n := unescape(d, j) // checked by the scanner: n > 0
		b = append(b, d[copied:j]...)
		b = utf8.AppendRune(b, r)
		j += n
		copied = j
	}
	return append(b, d[copied:]...)
}

// String returns the string's value.
func (t Text) String() string {
	if !t.escaped {
		return string(t.raw)
	}
	return string(t.AppendTo(make([]byte, 0, len(t.raw))))
}
