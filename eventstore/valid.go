package eventstore

import "github.com/amends-dev/amends/internal/jsonlex"

// The largest nesting and object the validator takes on.
const (
	maxDepth   = 128
	maxMembers = 32
)

// validator checks JSON values as json/v2's decoder does with its
// defaults (RFC 7493: syntax, escapes that make valid code points, unique
// names in each object), in a document known to be valid UTF-8, and finds
// where they end. It may refuse a valid value it does not take on (an
// object name with an escape, an object of more than maxMembers names,
// nesting deeper than maxDepth), but never takes one the decoder refuses:
// FuzzValidator holds it against jsontext's IsValid. It is a single pass
// without allocation.
type validator struct {
	b []byte
	i int
}

func (v *validator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) || depth > maxDepth {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		_, ok := v.string()
		return ok
	case c == 't':
		return v.word("true")
	case c == 'f':
		return v.word("false")
	case c == 'n':
		return v.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	}
	return false
}

func (v *validator) word(w string) bool {
	if len(v.b)-v.i < len(w) || string(v.b[v.i:v.i+len(w)]) != w {
		return false
	}
	v.i += len(w)
	return true
}

func (v *validator) object(depth int) bool {
	v.i++ // {
	v.space()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		return true
	}
	var names [maxMembers][]byte
	n := 0
	for {
		if v.i >= len(v.b) || v.b[v.i] != '"' || n == maxMembers {
			return false
		}
		start := v.i + 1
		plain, ok := v.string()
		if !ok || !plain {
			return false // a name with an escape: not compared here
		}
		name := v.b[start : v.i-1]
		for _, seen := range names[:n] {
			if string(seen) == string(name) {
				return false
			}
		}
		names[n] = name
		n++
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) array(depth int) bool {
	v.i++ // [
	v.space()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

// string consumes a string (the document is valid UTF-8) and reports
// whether it had no escape.
func (v *validator) string() (plain, ok bool) {
	plain = true
	b := v.b
	for i := v.i + 1; i < len(b); i++ {
		if plainByte[b[i]] {
			continue
		}
		switch c := b[i]; {
		case c == '"':
			v.i = i + 1
			return plain, true
		case c < 0x20:
			return false, false
		default: // a backslash
			plain = false
			v.i = i
			if !v.escape() {
				return false, false
			}
			i = v.i
		}
	}
	return false, false
}

// escape consumes the escape at the scan position up to its last byte.
func (v *validator) escape() bool {
	if v.i+1 >= len(v.b) {
		return false
	}
	v.i++
	switch v.b[v.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		r, ok := jsonlex.Hex4(v.b, v.i+1)
		if !ok {
			return false
		}
		v.i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate alone
		case r >= 0xD800 && r <= 0xDBFF:
			// a high surrogate must be followed by an escaped low one
			if v.i+2 >= len(v.b) || v.b[v.i+1] != '\\' || v.b[v.i+2] != 'u' {
				return false
			}
			lo, ok := jsonlex.Hex4(v.b, v.i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			v.i += 6
		}
		return true
	}
	return false
}

func (v *validator) digits() int {
	start := v.i
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i - start
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) number() bool {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return false
	}
	if v.b[v.i] == '0' {
		v.i++
	} else if v.digits() == 0 {
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	return true
}

// plainByte marks the bytes a string holds as they are: all but the
// quote, the backslash and control characters.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()
