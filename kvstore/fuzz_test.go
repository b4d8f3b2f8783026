package kvstore

import "testing"

// FuzzSegments: any parts join into a valid key that splits back into
// them, and any key either splits or is refused, never a panic.
func FuzzSegments(f *testing.F) {
	f.Add("shop", "Projector", "i-1")
	f.Add("", "ü.ö", "a b")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		key := Segments(a, b, c)
		if err := ValidKey(key); err != nil && len(key) <= MaxKeyBytes {
			t.Fatalf("Segments made an invalid key %q: %v", key, err)
		}
		got, err := SplitSegments(key, 3)
		if err != nil || got[0] != a || got[1] != b || got[2] != c {
			t.Fatalf("%q splits into %q, %v", key, got, err)
		}
		_, _ = SplitSegments(a, 2)
		_ = ValidKey(a)
	})
}
