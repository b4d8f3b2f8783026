package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/amends-dev/amends/aggregate"
)

// Prefix starts every fingerprint; it names the scheme's version so that a
// future scheme gives names that cannot be confused with these.
const Prefix = "fp1-"

// Of returns the fingerprint of a failure of function f with the given
// error code, message and stack trace, for a service whose module is
// module (see Frame): Prefix and 16 hexadecimal digits of the SHA-256 of
// the function's kind, context, processor and name, the code, Normalize(msg)
// and Frame(stack, module).
func Of(f aggregate.FunctionInfo, code, msg, stack, module string) string {
	h := sha256.New()
	for _, part := range []string{string(f.FunctionKind), f.ContextName, f.ProcessorName, f.Name, code, Normalize(msg), Frame(stack, module)} {
		_, _ = h.Write([]byte(part))
		_, _ = h.Write([]byte{0})
	}
	return Prefix + hex.EncodeToString(h.Sum(nil)[:8])
}

// Valid reports whether s has the shape of a fingerprint Of returns.
func Valid(s string) bool {
	if len(s) != len(Prefix)+16 || s[:len(Prefix)] != Prefix {
		return false
	}
	_, err := hex.DecodeString(s[len(Prefix):])
	return err == nil
}
