package jsonlex

import (
	"math"
	"unicode/utf8"

	"github.com/amends-dev/amends/internal/bounds"
)

// Scanner reads a JSON document from the start: each method consumes the
// next token if it is what the caller asks for and reports whether it
// was; on false the position is unspecified and the caller gives up on
// the document (to decode it with a library). The zero Scanner reads an
// empty document. Not safe for concurrent use.
type Scanner struct {
	d []byte
	i int
}

// NewScanner returns a Scanner at the start of d. It keeps d: the slices
// it returns alias it.
func NewScanner(d []byte) Scanner { return Scanner{d: d} }

// Pos returns the offset of the next byte to read.
func (s *Scanner) Pos() int { return s.i }

// Done reports whether the whole document has been consumed.
func (s *Scanner) Done() bool { return s.i == len(s.d) }

// Lit consumes lit if the document continues with it: for the fixed
// parts of a layout, such as `,"name":`.
func (s *Scanner) Lit(lit string) bool {
	if len(s.d)-s.i < len(lit) || string(s.d[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// Bool consumes true or false.
func (s *Scanner) Bool() (v, ok bool) {
	switch {
	case s.Lit("true"):
		return true, true
	case s.Lit("false"):
		return false, true
	}
	return false, false
}

// String consumes a string and returns it as it is written, checked: no
// control characters, valid UTF-8, only escapes that stand for a code
// point (a surrogate escape only as half of a pair).
func (s *Scanner) String() (Text, bool) {
	return s.str(nil)
}

// StringInto is String that returns the string's value: the document's
// bytes if it has no escape, else its unescaped bytes appended to *buf.
// Either way the value's capacity is its length, so appending to it
// never overwrites what follows.
func (s *Scanner) StringInto(buf *[]byte) ([]byte, bool) {
	t, ok := s.str(buf)
	if !ok {
		return nil, false
	}
	if !t.escaped {
		return t.raw, true
	}
	b := *buf
	return b[len(b)-t.n : len(b) : len(b)], true
}

// str consumes a string; with keep, the value of one with escapes is
// appended to *keep and its length is in Text.n.
func (s *Scanner) str(keep *[]byte) (Text, bool) {
	d := s.d
	if s.i >= len(d) || d[s.i] != '"' {
		return Text{}, false
	}
	start := s.i + 1
	j, high := skipPlain(d, start)
	if j < len(d) && d[j] == '\\' {
		return s.escapedStr(start, j, high, keep)
	}
	if j == len(d) || d[j] != '"' || high && !utf8.Valid(d[start:j]) {
		return Text{}, false
	}
	s.i = j + 1
	return Text{raw: d[start:j:j]}, true
}

// escapedStr is str for a string that starts at start and has its first
// escape at j; high reports whether a byte before j is not ASCII.
func (s *Scanner) escapedStr(start, j int, high bool, keep *[]byte) (Text, bool) {
	d := s.d
	var buf []byte
	from := 0
	if keep != nil {
		buf = *keep
		from = len(buf)
	}
	copied := start // the first byte not yet copied to buf
	for {
		// d[j] is a backslash.
		r, n := unescape(d, j)
		if n == 0 {
			return Text{}, false
		}
		if keep != nil {
			buf = append(buf, d[copied:j]...)
			buf = utf8.AppendRune(buf, r)
		}
		j += n
		copied = j
		var h bool
		j, h = skipPlain(d, j)
		high = high || h
		if j < len(d) && d[j] == '\\' {
			continue
		}
		if j == len(d) || d[j] != '"' || high && !utf8.Valid(d[start:j]) {
			return Text{}, false
		}
		t := Text{raw: d[start:j:j], escaped: true}
		if keep != nil {
			buf = append(buf, d[copied:j]...)
			*keep = buf
			t.n = len(buf) - from
		}
		s.i = j + 1
		return t, true
	}
}

// unescape reads the escape sequence at d[j] (a backslash): the rune it
// stands for and its length, 0 if it is not valid or is a surrogate
// escape that is not half of a pair.
func unescape(d []byte, j int) (r rune, n int) {
	if j+1 >= len(d) {
		return 0, 0
	}
	switch c := d[j+1]; c {
	case '"', '\\', '/':
		return rune(c), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := Hex4(d, j+2)
		switch {
		case !ok || r >= 0xdc00 && r <= 0xdfff:
			return 0, 0 // a low surrogate alone
		case !bounds.Within(r, 0xd800, 0xdbff):
			return r, 6
		}
		// A high surrogate must be followed by an escaped low one.
		lo, ok := Hex4(d, j+8)
		if !ok || d[j+6] != '\\' || d[j+7] != 'u' || !bounds.Within(lo, 0xdc00, 0xdfff) {
			return 0, 0
		}
		return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
	}
	return 0, 0
}

// Uint consumes a non-negative integer that fits 64 bits: at least one
// digit, no leading zero, no fraction or exponent.
func (s *Scanner) Uint() (uint64, bool) {
	v, ok := s.digits()
	return v, ok && !s.fraction()
}

// Int consumes an integer that fits a signed integer of bits bits (at
// most 64), other than -0: no leading zero, no fraction or exponent.
func (s *Scanner) Int(bits uint) (int64, bool) {
	neg := s.i < len(s.d) && s.d[s.i] == '-'
	if neg {
		s.i++
	}
	u, ok := s.digits()
	limit := uint64(1) << (bits - 1) // |min|; max is limit-1
	if !ok || s.fraction() || !neg && u >= limit || neg && (u > limit || u == 0) {
		return 0, false
	}
	if neg {
		return -int64(u), true // at limit, wraps to the minimum, which is right
	}
	return int64(u), true
}

// fraction reports whether the integer just consumed goes on with a
// fraction or an exponent.
func (s *Scanner) fraction() bool {
	return s.i < len(s.d) && (s.d[s.i] == '.' || s.d[s.i] == 'e' || s.d[s.i] == 'E')
}

// digits consumes a JSON integer's digits (no sign): at least one, no
// leading zero. It returns their value and false if there are none, or
// if the value overflows a uint64. Eight digits at a time where it can.
func (s *Scanner) digits() (uint64, bool) {
	d := s.d
	j := s.i
	var v uint64
	if j+8 <= len(d) {
		if w := le64(d[j:]); eightDigits(w) {
			v = eightDigitsValue(w)
			j += 8
		}
	}
	for j < len(d) && d[j]-'0' <= 9 {
		c := uint64(d[j] - '0')
		// 19 digits always fit.
		if j-s.i >= 19 && v > (math.MaxUint64-c)/10 {
			return 0, false
		}
		v = v*10 + c
		j++
	}
	n := j - s.i
	if n == 0 || n > 1 && d[s.i] == '0' {
		return 0, false
	}
	s.i = j
	return v, true
}

// Float consumes a JSON number that a float64 holds without overflowing
// (an integer part that fits a uint64 and an exponent from -270 to 270,
// so less than 10^290) and returns it as written, for strconv.ParseFloat.
func (s *Scanner) Float() ([]byte, bool) {
	d := s.d
	start := s.i
	if s.i < len(d) && d[s.i] == '-' {
		s.i++
	}
	if _, ok := s.digits(); !ok {
		return nil, false
	}
	j := s.i
	if j < len(d) && d[j] == '.' {
		j++
		k := j
		for j < len(d) && d[j]-'0' <= 9 {
			j++
		}
		if j == k {
			return nil, false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k, exp := j, 0
		for j < len(d) && d[j]-'0' <= 9 && exp <= 270 {
			exp = exp*10 + int(d[j]-'0')
			j++
		}
		if j == k || exp > 270 {
			return nil, false
		}
	}
	s.i = j
	return d[start:j:j], true
}
