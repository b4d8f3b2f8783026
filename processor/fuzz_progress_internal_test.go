package processor

import "testing"

// FuzzDecodeProgress: any value decodes to a progress or an error, never a
// panic; an accepted one is a version from 1 and encodes back to the same
// bytes.
func FuzzDecodeProgress(f *testing.F) {
	for _, s := range []string{"1", "42h", "18446744073709551615", "18446744073709551616", "0", "007", "-1", "1hh", "", "h"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeProgress(b)
		if err != nil {
			return
		}
		if v.version < 1 {
			t.Fatal("accepted version 0")
		}
		got, _ := progressCodec.Encode(v)
		if string(got) != string(b) {
			t.Fatalf("%q encodes back as %q", b, got)
		}
	})
}
