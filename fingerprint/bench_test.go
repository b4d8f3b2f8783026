package fingerprint_test

import (
	"fmt"
	"testing"

	"github.com/amends-dev/amends/fingerprint"
)

// BenchmarkOf is the recorder's cost per failure of its fingerprint: a
// typical message and a cockroachdb/errors stack.
func BenchmarkOf(b *testing.B) {
	err := siteA()
	msg, stack := "charge of order 6f1c2b9e-1d2a-4c3b-9a8f-0e1d2c3b4a59 failed: card declined (attempt 3)", fmt.Sprintf("%+v", err)
	for b.Loop() {
		_ = fingerprint.Of(fn, "Declined", msg, stack, module)
	}
}

func BenchmarkNormalize(b *testing.B) {
	msg := "charge of order 6f1c2b9e-1d2a-4c3b-9a8f-0e1d2c3b4a59 failed: card declined (attempt 3)"
	for b.Loop() {
		_ = fingerprint.Normalize(msg)
	}
}

func BenchmarkFrame(b *testing.B) {
	stack := fmt.Sprintf("%+v", siteA())
	for b.Loop() {
		_ = fingerprint.Frame(stack, module)
	}
}
