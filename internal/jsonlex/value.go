package jsonlex

// The largest nesting and object Value takes on.
const (
	MaxDepth   = 128
	maxMembers = 32
)

// Value consumes one JSON value of any kind, checked as json/v2's decoder
// checks it with its defaults (RFC 7493: syntax, valid UTF-8, escapes
// that make code points, unique names in each object; whitespace between
// tokens allowed), and returns its bytes. It may refuse a valid value it
// does not take on (an object name with an escape, an object of more than
// 32 names, nesting deeper than MaxDepth), never one the decoder refuses.
func (s *Scanner) Value() ([]byte, bool) {
	start := s.i
	if !s.value(0) {
		return nil, false
	}
	return s.d[start:s.i:s.i], true
}

// Space consumes JSON whitespace.
func (s *Scanner) Space() {
	for s.i < len(s.d) {
		switch s.d[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *Scanner) value(depth int) bool {
	if s.i >= len(s.d) || depth > MaxDepth {
		return false
	}
	switch c := s.d[s.i]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, ok := s.String()
		return ok
	case c == 't':
		return s.Lit("true")
	case c == 'f':
		return s.Lit("false")
	case c == 'n':
		return s.Lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

func (s *Scanner) object(depth int) bool {
	s.i++ // {
	s.Space()
	if s.Lit("}") {
		return true
	}
	var names [maxMembers][]byte
	n := 0
	for {
		name, ok := s.String()
		if !ok || name.escaped || n == maxMembers {
			return false // an escaped name is not compared here
		}
		for _, seen := range names[:n] {
			if string(seen) == string(name.raw) {
				return false
			}
		}
		names[n] = name.raw
		n++
		s.Space()
		if !s.Lit(":") {
			return false
		}
		s.Space()
		if !s.value(depth) {
			return false
		}
		if more, ok := s.after("}"); !more {
			return ok
		}
	}
}

func (s *Scanner) array(depth int) bool {
	s.i++ // [
	s.Space()
	if s.Lit("]") {
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		if more, ok := s.after("]"); !more {
			return ok
		}
	}
}

// after reads what follows a member or an element: a comma (more, and
// the space after it) or close (the end, ok); anything else is not ok.
func (s *Scanner) after(close string) (more, ok bool) {
	s.Space()
	switch {
	case s.Lit(","):
		s.Space()
		return true, true
	case s.Lit(close):
		return false, true
	}
	return false, false
}

// run consumes a run of digits and returns its length.
func (s *Scanner) run() int {
	start := s.i
	for s.i < len(s.d) && s.d[s.i]-'0' <= 9 {
		s.i++
	}
	return s.i - start
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() bool {
	s.Lit("-")
	switch {
	case s.Lit("0"):
	case s.run() == 0:
		return false
	}
	if s.Lit(".") && s.run() == 0 {
		return false
	}
	if s.Lit("e") || s.Lit("E") {
		if !s.Lit("+") {
			s.Lit("-")
		}
		if s.run() == 0 {
			return false
		}
	}
	return true
}
