package fingerprint_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/amends-dev/amends/fingerprint"
)

// FuzzNormalize: any input normalises without panicking, to at most three
// times MaxInput bytes (a lone digit becomes <n>), to valid UTF-8 when the
// input is; Frame never panics either.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"order 42", `"q" 'k' ` + "`b`", "2026-12-01T11:22:52.1Z", "0x1f deadbeef99", "6f1c2b9e-1d2a-4c3b-9a8f-0e1d2c3b4a59", "don't", "1.", "\"\\", strings.Repeat("9", 5000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := fingerprint.Normalize(s)
		if len(n) > 3*fingerprint.MaxInput {
			t.Fatalf("normalised to %d bytes", len(n))
		}
		if utf8.ValidString(s) && !utf8.ValidString(n) {
			t.Fatalf("Normalize(%q) = %q is not UTF-8", s, n)
		}
		_ = fingerprint.Frame(s, "")
	})
}
