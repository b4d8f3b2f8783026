package fingerprint

import (
	"regexp"
	"strings"
	"unicode"
)

// MaxInput is how many bytes of a message or stack trace are read.
const MaxInput = 4 << 10

var (
	quoted    = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	uuidRE    = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	timeRE    = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`)
	hexRE     = regexp.MustCompile(`(?i)\b0x[0-9a-f]+\b|\b[0-9a-f]{8,}\b`)
	idRE      = regexp.MustCompile(`\b[A-Za-z0-9_-]{16,}\b`)
	numberRE  = regexp.MustCompile(`\d+(?:\.\d+)?`)
	spaceRE   = regexp.MustCompile(`\s+`)
	hasDigit  = func(s string) bool { return strings.ContainsFunc(s, unicode.IsDigit) }
	hasLetter = func(s string) bool { return strings.ContainsFunc(s, unicode.IsLetter) }
)

// Normalize returns msg with its variable parts replaced (see the package
// documentation). It reads at most MaxInput bytes of msg.
func Normalize(msg string) string {
	msg = cut(msg)
	msg = quoted.ReplaceAllString(msg, "<q>")
	msg = uuidRE.ReplaceAllString(msg, "<uuid>")
	msg = timeRE.ReplaceAllString(msg, "<time>")
	msg = hexRE.ReplaceAllStringFunc(msg, func(s string) string {
		if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") || hasDigit(s) {
			return "<n>"
		}
		return s
	})
	msg = idRE.ReplaceAllStringFunc(msg, func(s string) string {
		if hasDigit(s) && hasLetter(s) {
			return "<id>"
		}
		return s
	})
	msg = numberRE.ReplaceAllString(msg, "<n>")
	return strings.TrimSpace(spaceRE.ReplaceAllString(msg, " "))
}

// cut returns the first MaxInput bytes of s, not splitting a UTF-8
// sequence.
func cut(s string) string {
	if len(s) <= MaxInput {
		return s
	}
	i := MaxInput
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
