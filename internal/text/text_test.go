package text_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/text"
)

func TestAtNamesTheCharacterNotItsFirstByte(t *testing.T) {
	assert.Equal(t, `'ë' (bytes c3 ab)`, text.At("r-ë", 2))
	assert.Equal(t, `' '`, text.At("a b", 1))
	assert.Equal(t, `the byte 0xff (not UTF-8)`, text.At("a\xffb", 1))
	assert.Equal(t, `the byte 0xc3 (not UTF-8)`, text.At("a\xc3", 1), "a sequence cut short")
	assert.Equal(t, `'\u202e' (bytes e2 80 ae)`, text.At("a\u202eb", 1), "a bidi control shown escaped")
}

func TestLineIsTheOneRuleForOperatorText(t *testing.T) {
	for _, ok := range []string{"", "rolled back the deploy", "tab\tseparated", "naïve 日本語 ✓", "emoji 👍🏽"} {
		assert.NoError(t, text.Line(ok, 1024), "%q", ok)
	}
	for in, msg := range map[string]string{
		"a\nb":                    "must be one line without control characters: it has the line break U+000A at byte 1",
		"a\rb":                    "line break U+000D",
		"a\u0085b":                "line break U+0085",
		"a\x00b":                  "must be UTF-8 text without control characters: it has U+0000 at byte 1",
		"a\x1bb":                  "U+001B",
		"a\x7fb":                  "U+007F",
		"a\u009bb":                "U+009B",
		"approved \u202egnp.exe":  "invisible character U+202E at byte 9",
		"\u2066isolate\u2069":     "U+2066",
		"ok\u200b":                "U+200B",
		"\ufeffbom":               "U+FEFF",
		"one\u2028two":            "U+2028",
		"one\u2029two":            "U+2029",
		"soft\u00adhyphen":        "U+00AD",
		"bad \xff byte":           "is not valid UTF-8: it has the byte 0xff (not UTF-8) at byte 4",
		strings.Repeat("x", 1025): "is 1025 bytes, over the limit of 1024",
	} {
		err := text.Line(in, 1024)
		if assert.Error(t, err, "%q", in) {
			assert.Contains(t, err.Error(), msg, "%q", in)
		}
	}
}

// Whatever Line accepts holds no character Refused names, is valid UTF-8
// and within its bound; whatever it refuses has one, or is not UTF-8, or
// is too long.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "reason", "a\nb", "\u202e", "\xff", "tab\t", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := text.Line(s, 64)
		bad := len(s) > 64 || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { _, no := text.Refused(r); return no })
		assert.Equal(t, bad, err != nil, "%q: %v", s, err)
	})
}

func TestCutKeepsWholeCharacters(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exact", 5, "exact"},
		{"abcdef", 3, "abc"},
		{"aë", 2, "a"},   // ë is 2 bytes: not split
		{"a€b", 3, "a"},  // € is 3 bytes
		{"a€b", 4, "a€"}, // whole
		{"€", 0, ""},
		{"€", -1, ""},
		{"\xff\xfe", 1, "\xff"}, // not UTF-8: each byte starts its own sequence
	} {
		got := text.Cut(c.s, c.n)
		if got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
