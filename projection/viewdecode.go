package projection

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/amends-dev/amends/internal/jsonlex"
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
	id          []byte // State.ID
	eventID     []byte // State.EventID.ID
	aggregateID []byte // State.EventID.AggregateID.AggregateID
	aggContext  []byte // State.EventID.AggregateID.ContextName
	aggName     []byte // State.EventID.AggregateID.AggregateName
	fnKind      []byte // State.Function.FunctionKind
	fnContext   []byte // State.Function.ContextName
	fnProcessor []byte // State.Function.ProcessorName
	fnName      []byte // State.Function.Name
	errorCode   []byte // State.Error.ErrorCode
	errorMsg    []byte // State.Error.ErrorMsg
	fingerprint []byte // State.Error.Fingerprint
	status      []byte // State.Status
	recoverable []byte // State.Recoverable
	executeAt   int64  // State.ExecuteAt
	timeoutAt   int64  // State.RetryState.TimeoutAt
	nextRetryAt int64  // State.RetryState.NextRetryAt
	retries     int32  // State.RetryState.Retries
	maxRetries  int32  // State.RetrySpec.MaxRetries
	version     uint64 // Version
	seq         uint64 // Seq

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
	// Every field but the optional fingerprint is set on success.
	out.fingerprint, out.buf = nil, out.buf[:0]
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
		s.lit(`,"seq":`) && s.uint(&f.seq) &&
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
	j, high := skipPlain(d, start)
	switch {
	case j == len(d):
		return false
	case d[j] == '\\':
		return s.escapedStr(start, j, high, dst)
	case d[j] != '"':
		return false
	case high && !utf8.Valid(d[start:j]):
		return false
	}
	if dst != nil {
		*dst = d[start:j:j]
	}
	s.i = j + 1
	return true
}

// escapedStr is str for a string that starts at offset start and has its
// first escape sequence at j; high reports whether a byte before j is not
// ASCII. The value, if kept, goes to the scratch buffer.
func (s *viewScanner) escapedStr(start, j int, high bool, dst *[]byte) bool {
	d := s.d
	keep := dst != nil
	buf := s.f.buf
	from := len(buf)
	copied := start // the first byte not yet copied to buf
	for {
		// d[j] is a backslash.
		r, n := unescape(d, j)
		if n == 0 {
			return false
		}
		if keep {
			buf = append(buf, d[copied:j]...)
			buf = utf8.AppendRune(buf, r)
		}
		j += n
		copied = j
		var h bool
		j, h = skipPlain(d, j)
		high = high || h
		switch {
		case j == len(d):
			return false
		case d[j] == '\\':
			continue
		case d[j] != '"':
			return false
		case high && !utf8.Valid(d[start:j]):
			return false
		}
		if keep {
			buf = append(buf, d[copied:j]...)
			s.f.buf = buf
			*dst = buf[from:len(buf):len(buf)]
		}
		s.i = j + 1
		return true
	}
}

// skipPlain returns the offset of the first byte from j on that a JSON
// string does not hold as it is ('"', '\\' or a control character), or
// len(d); high reports whether a byte it passed is not ASCII. Eight
// bytes at a time where it can.
func skipPlain(d []byte, j int) (end int, high bool) {
	var bits8 uint64 // the bytes passed, or-ed
	for j+8 <= len(d) {
		w := binary.LittleEndian.Uint64(d[j:])
		if m := lookMask(w); m != 0 {
			k := bits.TrailingZeros64(m) / 8
			bits8 |= w & (1<<(8*k) - 1)
			return j + k, bits8&hiBits != 0
		}
		bits8 |= w
		j += 8
	}
	for ; j < len(d); j++ {
		c := d[j]
		if !plainByte[c] {
			break
		}
		bits8 |= uint64(c)
	}
	return j, bits8&hiBits != 0
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

// unescape reads the escape sequence at d[j] (a backslash): the rune it
// stands for and its length, 0 if it is not valid or is a surrogate
// escape that is not half of a pair.
func unescape(d []byte, j int) (r rune, n int) {
	if j+1 >= len(d) {
		return 0, 0
	}
	switch d[j+1] {
	case '"', '\\', '/':
		return rune(d[j+1]), 2
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
		r, ok := jsonlex.Hex4(d, j+2)
		switch {
		case !ok || r >= 0xdc00 && r <= 0xdfff:
			return 0, 0
		case r < 0xd800 || r > 0xdbff:
			return r, 6
		}
		lo, ok := jsonlex.Hex4(d, j+8)
		if !ok || d[j+6] != '\\' || d[j+7] != 'u' || lo < 0xdc00 || lo > 0xdfff {
			return 0, 0
		}
		return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
	}
	return 0, 0
}

// digits consumes a JSON integer's digits (no sign): at least one, no
// leading zero. It returns their value and false if there are
// none, or if the value overflows a uint64.
func (s *viewScanner) digits() (uint64, bool) {
	d := s.d
	j := s.i
	var v uint64
	if j+8 <= len(d) {
		if w := binary.LittleEndian.Uint64(d[j:]); eightDigits(w) {
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
