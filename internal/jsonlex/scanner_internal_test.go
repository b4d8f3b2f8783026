package jsonlex

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Integers of every length read exactly, eight digits at a time or not;
// one more than a uint64 holds is refused.
func TestDigits(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for n := 1; n <= 20; n++ {
		for range 200 {
			b := []byte{byte('1' + r.IntN(9))}
			for len(b) < n {
				b = append(b, byte('0'+r.IntN(10)))
			}
			if n == 20 {
				b[0], b[1] = '1', '0' // below 2^64 = 18446744073709551616
			}
			want, err := strconv.ParseUint(string(b), 10, 64)
			require.NoError(t, err)
			s := Scanner{d: append(b, ',')}
			got, ok := s.digits()
			require.True(t, ok, "digits must read %s", b)
			require.Equal(t, want, got, "digits of %s", b)
			require.Equal(t, n, s.i, "digits must stop at the comma after %s", b)
		}
	}
	for _, c := range []struct {
		in string
		ok bool
	}{{"0", true}, {"18446744073709551615", true}, {"18446744073709551616", false}, {"99999999999999999999", false}, {"012345678", false}, {"", false}, {"x", false}} {
		s := Scanner{d: []byte(c.in)}
		_, ok := s.digits()
		assert.Equal(t, c.ok, ok, "digits of %q", c.in)
	}
}

// skipPlain stops at the first byte a string does not hold as it is,
// wherever it is in a word, and notes bytes that are not ASCII only
// before it.
func TestSkipPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	plain := []byte("az AZ09~/ !#\x7f\xc3\xa9\xff\xa2\xa0\xdc")
	special := []byte{'"', '\\', 0, 0x1f, '\n'}
	for range 5000 {
		n := r.IntN(40)
		d := make([]byte, n, n+1)
		for i := range d {
			d[i] = plain[r.IntN(len(plain))]
		}
		want := len(d)
		if r.IntN(4) > 0 && n > 0 {
			want = r.IntN(n)
			d[want] = special[r.IntN(len(special))]
			for i := want + 1; i < n; i++ {
				if r.IntN(3) == 0 {
					d[i] = special[r.IntN(len(special))]
				}
			}
		}
		wantHigh := false
		for _, c := range d[:want] {
			wantHigh = wantHigh || c >= utf8.RuneSelf
		}
		end, high := skipPlain(d, 0)
		require.Equal(t, want, end, "skipPlain(%q)", d)
		require.Equal(t, wantHigh, high, "skipPlain(%q) saw a byte that is not ASCII", d)
	}
}
