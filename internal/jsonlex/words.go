package jsonlex

import (
	"encoding/binary"
	"math/bits"
)

// Eight bytes at a time: the scanner's fast paths over string bytes and
// digits.

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// skipPlain returns the offset of the first byte from j on that a JSON
// string does not hold as it is ('"', '\\' or a control character), or
// len(d); high reports whether a byte it passed is not ASCII. Eight
// bytes at a time where it can.
func skipPlain(d []byte, j int) (end int, high bool) {
	var seen uint64 // the bytes passed, or-ed
	for j+8 <= len(d) {
		w := le64(d[j:])
		if m := lookMask(w); m != 0 {
			k := bits.TrailingZeros64(m) / 8
			seen |= w & (1<<(8*k) - 1)
			return j + k, seen&hiBits != 0
		}
		seen |= w
		j += 8
	}
	for ; j < len(d); j++ {
		c := d[j]
		if !plainByte[c] {
			break
		}
		seen |= uint64(c)
	}
	return j, seen&hiBits != 0
}

const (
	loBits = 0x0101010101010101 // the low bit of each byte
	hiBits = 0x8080808080808080 // the high bit of each byte
)

// lookMask has the high bit set of each byte of w (the first in the
// lowest byte) that is a control character, '"' or '\\', and may have it
// set of bytes after such a byte, never before: the lowest bit set marks
// the first byte that needs a look. Bytes that are not ASCII do not
// count. (A byte's subtraction borrows from the next only if it matched.)
// Flipping bit 1 maps '"' (0x22) to 0x20 and keeps control characters
// below 0x20 and every other byte at 0x20 or above, so one test "below
// 0x21" finds both.
func lookMask(w uint64) uint64 {
	low := w ^ (loBits * 0x02)
	slash := w ^ (loBits * '\\')
	return ((low-loBits*0x21)&^low | (slash-loBits)&^slash) & hiBits
}

// plainByte holds the bytes a JSON string holds as they are: all but
// control characters, '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// eightDigits reports whether the eight bytes of w are all '0' to '9'.
func eightDigits(w uint64) bool {
	return w&0xf0f0f0f0f0f0f0f0 == 0x3030303030303030 &&
		(w+0x0606060606060606)&0xf0f0f0f0f0f0f0f0 == 0x3030303030303030
}

// eightDigitsValue is the number the eight digits of w (the first in the
// lowest byte) write: pairs, then quads, then all eight, each step with
// one multiplication.
func eightDigitsValue(w uint64) uint64 {
	w = (w & 0x0f0f0f0f0f0f0f0f) * (10<<8 + 1) >> 8
	w = (w & 0x00ff00ff00ff00ff) * (100<<16 + 1) >> 16
	return (w & 0x0000ffff0000ffff) * (10000<<32 + 1) >> 32 & 0xffffffff
}
