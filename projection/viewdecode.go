package projection

import (
	"unicode/utf8"
)

// viewFields is what the index keeps of a stored view, read by
// decodeViewFields without decoding the whole view.
//
// The byte slices alias the input of decodeViewFields, or, for a string
// the JSON writes with escape sequences, the scratch buffer inside the
// viewFields; either way they are valid only until the input is changed
// or the viewFields is passed to decodeViewFields again. Copy (or intern)
// what must be kept. Each slice's capacity is its length, so appending to
// one never overwrites its neighbours. The enums (fnKind, status,
// recoverable) are the canonical names, e.g. "FAILED"; fingerprint is nil
// when the view has none.
type viewFields struct {
	id, eventID, aggregateID       []byte
	aggContext, aggName            []byte
	fnKind, fnContext, fnProcessor []byte
	fnName                         []byte
	errorCode, errorMsg            []byte
	fingerprint                    []byte
	status, recoverable            []byte
	executeAt                      int64
	timeoutAt, nextRetryAt         int64
	retries, maxRetries            int32
	version                        uint64

	buf []byte // unescaped strings; reused by the next call
}

// decodeViewFields reads the fields of viewFields from a stored view in
// the one shape encodeView writes: compact JSON, the members in
// encodeView's order, each optional member (eventId.seq,
// error.bindingErrors, error.fingerprint, retrySpec.maxBackoff,
// retrySpec.jitter, state.preparedVersion) present or absent. It is a
// single pass over data and allocates nothing once out's scratch buffer
// has grown to the longest escaped strings it meets.
//
// The contract: whenever ok is true, decodeView(data) succeeds and every
// field of out equals the corresponding field of the View it returns. So
// ok is false for every input decodeView refuses (invalid JSON or UTF-8,
// a duplicate or missing member, trailing data, a number out of its
// field's range, an enum that is not one of its values, an empty record
// id, version 0), and also for anything else the scanner is not sure of:
// whitespace, members in another order, unknown members, null, enums not
// in their canonical case, lone surrogate escapes. On false out holds
// garbage and the caller decodes with decodeView, which then names the
// problem or reads a view the fast path does not know.
//
// Not safe for concurrent use with the same out.
func decodeViewFields(data []byte, out *viewFields) (ok bool) {
	*out = viewFields{buf: out.buf[:0]}
	s := viewScanner{d: data, f: out}
	f := out
	ok = s.lit(`{"state":{"id":`) && s.str(&f.id) &&
		s.lit(`,"eventId":{"id":`) && s.str(&f.eventID) &&
		s.lit(`,"aggregateId":{"contextName":`) && s.str(&f.aggContext) &&
		s.lit(`,"aggregateName":`) && s.str(&f.aggName) &&
		s.lit(`,"aggregateId":`) && s.str(&f.aggregateID) &&
		s.lit(`,"tenantId":`) && s.str(nil) &&
		s.lit(`},"version":`) && s.uint(nil) &&
		(!s.opt(`,"seq":`) || s.uint(nil)) &&
		s.lit(`},"function":{"functionKind":`) && s.str(&f.fnKind) &&
		s.lit(`,"contextName":`) && s.str(&f.fnContext) &&
		s.lit(`,"processorName":`) && s.str(&f.fnProcessor) &&
		s.lit(`,"name":`) && s.str(&f.fnName) &&
		s.lit(`},"error":{"errorCode":`) && s.str(&f.errorCode) &&
		s.lit(`,"errorMsg":`) && s.str(&f.errorMsg) &&
		s.lit(`,"stackTrace":`) && s.str(nil) &&
		(!s.opt(`,"bindingErrors":`) || s.bindingErrors()) &&
		(!s.opt(`,"fingerprint":`) || s.str(&f.fingerprint)) &&
		s.lit(`,"succeeded":`) && s.bool() &&
		s.lit(`},"executeAt":`) && s.int(&f.executeAt, 64) &&
		s.lit(`,"retrySpec":{"maxRetries":`) && s.int32(&f.maxRetries) &&
		s.lit(`,"minBackoff":`) && s.int32(nil) &&
		s.lit(`,"executionTimeout":`) && s.int32(nil) &&
		(!s.opt(`,"maxBackoff":`) || s.int32(nil)) &&
		(!s.opt(`,"jitter":`) || s.float()) &&
		s.lit(`},"retryState":{"retries":`) && s.int32(&f.retries) &&
		s.lit(`,"retryAt":`) && s.int(nil, 64) &&
		s.lit(`,"timeoutAt":`) && s.int(&f.timeoutAt, 64) &&
		s.lit(`,"nextRetryAt":`) && s.int(&f.nextRetryAt, 64) &&
		s.lit(`},"status":`) && s.str(&f.status) &&
		s.lit(`,"recoverable":`) && s.str(&f.recoverable) &&
		(!s.opt(`,"preparedVersion":`) || s.uint(nil)) &&
		s.lit(`,"isBelowRetryThreshold":`) && s.bool() &&
		s.lit(`,"isRetryable":`) && s.bool() &&
		s.lit(`},"version":`) && s.uint(&f.version) &&
		s.lit(`,"updatedAt":`) && s.int(nil, 64) &&
		s.lit(`,"seq":`) && s.uint(nil) &&
		s.lit(`}`) && s.i == len(data)
	return ok && len(f.id) > 0 && f.version != 0 &&
		isFunctionKind(f.fnKind) && isStatus(f.status) && isRecoverability(f.recoverable)
}

// The enums as decodeView reads them are their canonical names; the fast
// path accepts only those, not the other cases decodeView also reads.
func isFunctionKind(b []byte) bool {
	switch string(b) {
	case "COMMAND", "SOURCING", "EVENT", "STATE_EVENT", "ERROR":
		return true
	}
	return false
}

func isStatus(b []byte) bool {
	switch string(b) {
	case "FAILED", "PREPARED", "SUCCEEDED":
		return true
	}
	return false
}

func isRecoverability(b []byte) bool {
	switch string(b) {
	case "RECOVERABLE", "UNRECOVERABLE", "UNKNOWN":
		return true
	}
	return false
}

// viewScanner is the state of one decodeViewFields: the input, the next
// byte's offset and the fields it fills.
type viewScanner struct {
	d []byte
	i int
	f *viewFields
}

// lit consumes lit if the input continues with it.
func (s *viewScanner) lit(lit string) bool {
	if len(s.d)-s.i < len(lit) || string(s.d[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// opt is lit for an optional member: whether it is there.
func (s *viewScanner) opt(lit string) bool { return s.lit(lit) }

// bool consumes true or false.
func (s *viewScanner) bool() bool { return s.lit("true") || s.lit("false") }

// bindingErrors consumes error.bindingErrors as encoding/json writes it:
// an array of {"name":...,"msg":...}.
func (s *viewScanner) bindingErrors() bool {
	if !s.lit("[") {
		return false
	}
	if s.lit("]") {
		return true
	}
	for {
		if !s.lit(`{"name":`) || !s.str(nil) || !s.lit(`,"msg":`) || !s.str(nil) || !s.lit("}") {
			return false
		}
		if s.lit("]") {
			return true
		}
		if !s.lit(",") {
			return false
		}
	}
}

// str consumes a JSON string and stores its value in *dst if dst is not
// nil. It refuses control characters, invalid UTF-8, unknown escapes and
// surrogate escapes that are not a valid pair.
func (s *viewScanner) str(dst *[]byte) bool {
	d := s.d
	if s.i >= len(d) || d[s.i] != '"' {
		return false
	}
	start := s.i + 1
	ascii := true
	for j := start; j < len(d); j++ {
		c := d[j]
		if plainASCII[c] {
			continue
		}
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(d[start:j]) {
				return false
			}
			if dst != nil {
				*dst = d[start:j:j]
			}
			s.i = j + 1
			return true
		case c == '\\':
			return s.escapedStr(start, dst)
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return false
}

// plainASCII holds the bytes a JSON string holds as they are and that
// are ASCII: all but control characters, '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapedStr is str for a string with escape sequences, which starts at
// offset start: the value goes to the scratch buffer.
func (s *viewScanner) escapedStr(start int, dst *[]byte) bool {
	d := s.d
	buf := s.f.buf
	from := len(buf)
	lit := start // the first byte not yet copied
	for j := start; j < len(d); {
		c := d[j]
		switch {
		case c == '"':
			if !utf8.Valid(d[start:j]) {
				return false
			}
			buf = append(buf, d[lit:j]...)
			s.f.buf = buf
			if dst != nil {
				*dst = buf[from:len(buf):len(buf)]
			}
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c != '\\':
			j++
			continue
		}
		buf = append(buf, d[lit:j]...)
		if j+1 >= len(d) {
			return false
		}
		n := 2
		switch d[j+1] {
		case '"', '\\', '/':
			buf = append(buf, d[j+1])
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(d, j+2)
			n = 6
			switch {
			case !ok || r >= 0xdc00 && r <= 0xdfff:
				return false
			case r >= 0xd800 && r <= 0xdbff:
				lo, ok := hex4(d, j+8)
				if !ok || d[j+6] != '\\' || d[j+7] != 'u' || lo < 0xdc00 || lo > 0xdfff {
					return false
				}
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				n = 12
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return false
		}
		j += n
		lit = j
	}
	return false
}

// hex4 reads the four hex digits at d[i:]; ok is false if there are not
// four.
func hex4(d []byte, i int) (r rune, ok bool) {
	if i+4 > len(d) {
		return 0, false
	}
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// digits consumes a JSON integer's digits (no sign): at least one, no
// leading zero, at most 20. It returns their value and false if there are
// none, or if the value overflows a uint64.
func (s *viewScanner) digits() (uint64, bool) {
	d := s.d
	j := s.i
	var v uint64
	for j < len(d) && d[j] >= '0' && d[j] <= '9' {
		c := uint64(d[j] - '0')
		if v > (1<<64-1-c)/10 {
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

// uint consumes an unsigned integer into *dst if dst is not nil. A
// fraction or exponent is refused by the literal that follows.
func (s *viewScanner) uint(dst *uint64) bool {
	v, ok := s.digits()
	if ok && dst != nil {
		*dst = v
	}
	return ok
}

// int consumes a signed integer of bits bits into *dst if dst is not nil.
func (s *viewScanner) int(dst *int64, bits uint) bool {
	neg := s.i < len(s.d) && s.d[s.i] == '-'
	if neg {
		s.i++
	}
	u, ok := s.digits()
	limit := uint64(1) << (bits - 1) // |min|; max is limit-1
	if !ok || !neg && u >= limit || neg && u > limit {
		return false
	}
	v := int64(u)
	if neg {
		v = -v // at limit, wraps to the minimum, which is right
	}
	if dst != nil {
		*dst = v
	}
	return true
}

// int32 is int for an int32 field.
func (s *viewScanner) int32(dst *int32) bool {
	var v int64
	if !s.int(&v, 32) {
		return false
	}
	if dst != nil {
		*dst = int32(v)
	}
	return true
}

// float consumes a JSON number that a float64 holds without overflowing:
// an integer part that fits a uint64 and an exponent from -270 to 270, so
// less than 10^290.
func (s *viewScanner) float() bool {
	d := s.d
	j := s.i
	if j < len(d) && d[j] == '-' {
		j++
	}
	s.i = j
	if _, ok := s.digits(); !ok {
		return false
	}
	j = s.i
	if j < len(d) && d[j] == '.' {
		j++
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k, exp := j, 0
		for j < len(d) && d[j] >= '0' && d[j] <= '9' && exp <= 270 {
			exp = exp*10 + int(d[j]-'0')
			j++
		}
		if j == k || exp > 270 {
			return false
		}
	}
	s.i = j
	return true
}
