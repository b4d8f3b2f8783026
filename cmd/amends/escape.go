package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// safeWriter writes what the CLI prints with every character a terminal
// would not show as itself escaped: control characters other than newline
// and tab (an ESC could move the cursor, a carriage return overwrite a
// line), format characters (a U+202E bidi override reverses the text after
// it, zero-width characters hide), line and paragraph separators, and
// bytes that are not UTF-8. They become \uXXXX (\xNN for a stray byte), so
// a record's reason prints as what it is, and JSON output stays JSON (an
// escape inside a string decodes to the same character). Safe for use by
// one goroutine at a time, like the writer it wraps.
type safeWriter struct {
	w     io.Writer
	carry []byte // the start of a character split across writes
}

// visibleRune reports whether r prints as itself.
func visibleRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return true
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029':
		return false
	}
	return true
}

// escapeText returns s with the characters visibleRune refuses escaped.
func escapeText(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !visibleRune(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !visibleRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func (w *safeWriter) Write(p []byte) (int, error) {
	data := append(w.carry, p...)
	w.carry = nil
	// Keep an incomplete character at the end for the next write.
	if cut := incompleteTail(data); cut > 0 {
		w.carry = append([]byte{}, data[len(data)-cut:]...)
		data = data[:len(data)-cut]
	}
	if _, err := io.WriteString(w.w, escapeText(string(data))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// incompleteTail is the length of a UTF-8 sequence cut short at the end
// of b (0 if none): at most 3 bytes that start a longer character.
func incompleteTail(b []byte) int {
	for n := 1; n <= 3 && n <= len(b); n++ {
		c := b[len(b)-n]
		if utf8.RuneStart(c) {
			if c >= 0xC0 && !utf8.FullRune(b[len(b)-n:]) {
				return n
			}
			return 0
		}
	}
	return 0
}
