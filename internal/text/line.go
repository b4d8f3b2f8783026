package text

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxReasonBytes bounds an operator's reason wherever one is taken: a
// command's, a circuit's, a rule's, a hold action's, a repair's, a
// replay's.
const MaxReasonBytes = 1024

// Refused reports whether operator text may not hold r, and what r is:
//
//   - a control character (C0 but the tab, DEL, C1): a terminal may act
//     on it, and a line break would let a reason forge another line of a
//     log or a table;
//   - a format character (Unicode category Cf: the bidi controls such as
//     U+202E, zero-width spaces and joiners, the byte-order mark, soft
//     hyphens): it shows as nothing, or reorders the text around it, so
//     that an audit trail would read otherwise than it is;
//   - a line or paragraph separator (U+2028, U+2029).
func Refused(r rune) (what string, refused bool) {
	switch {
	case r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85:
		return "line break", true
	case r < 0x20 && r != '\t', r == 0x7f, r >= 0x80 && r < 0xa0:
		return "control character", true
	case r == '\u2028' || r == '\u2029':
		return "invisible character", true
	case unicode.Is(unicode.Cf, r):
		return "invisible character", true
	}
	return "", false
}

// Line checks one line of operator text (a reason, a note, an actor's
// name): at most max bytes of valid UTF-8 holding no character Refused
// names. It is the one rule for such text, applied where it enters (the
// HTTP API, the CLI, the Go API) and where it is read back from NATS, so
// that what was taken is always read again. The error, to follow the
// field's name, says what is wrong and where: "is 2000 bytes, over the
// limit of 1024", "has the invisible character U+202E at byte 9 ...".
func Line(v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("is %d bytes, over the limit of %d", len(v), max)
	}
	for i, r := range v {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(v[i:]); n <= 1 {
				return fmt.Errorf("is not valid UTF-8: it has %s at byte %d", At(v, i), i)
			}
		}
		what, refused := Refused(r)
		if !refused {
			continue
		}
		switch what {
		case "line break":
			return fmt.Errorf("must be one line without control characters: it has the line break %U at byte %d", r, i)
		case "control character":
			return fmt.Errorf("must be UTF-8 text without control characters: it has %U at byte %d", r, i)
		}
		return fmt.Errorf("has the invisible character %U at byte %d (a format character such as a bidi control or a zero-width space, or a line separator: it would make the text read otherwise than it is); write the text without it", r, i)
	}
	return nil
}
