// Package bounds holds the one range check of the validators.
package bounds

import "cmp"

// Within reports whether v is from lo to hi, both included. A NaN is
// within nothing.
func Within[T cmp.Ordered](v, lo, hi T) bool { return v >= lo && v <= hi }
