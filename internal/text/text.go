// Package text says how amends names the characters of a value it
// refuses, so that an error shows what the writer wrote: "ë", not the
// "Ã" of its first byte.
package text

import (
	"fmt"
	"unicode/utf8"
)

// At names what starts at byte i of s: the character quoted, with its
// bytes when it takes more than one, if a valid UTF-8 sequence starts
// there, else the byte in hex. i must be an index of s.
func At(s string, i int) string {
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && n <= 1:
		return fmt.Sprintf("the byte 0x%02x (not UTF-8)", s[i])
	case n == 1:
		return fmt.Sprintf("%q", r)
	}
	return fmt.Sprintf("%q (bytes % x)", r, s[i:i+n])
}

// Cut is the longest prefix of s of at most n bytes that does not split a
// UTF-8 sequence: s itself when it is short enough. The caller marks the
// cut if it wants one. n < 0 counts as 0.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
