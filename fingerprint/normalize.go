package fingerprint

import "strings"

// MaxInput is how many bytes of a message or stack trace are read.
const MaxInput = 4 << 10

// Normalize returns msg with its variable parts replaced (see the package
// documentation). It reads at most MaxInput bytes of msg, in one pass.
func Normalize(msg string) string {
	s := cut(msg)
	var b strings.Builder
	b.Grow(len(s))
	space := false // a run of white space is pending
	emit := func(t string) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(t)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c):
			space = true
			i++
			continue
		case c == '"' || c == '`' || c == '\'' && (i == 0 || !isWord(s[i-1])):
			if n := quotedAt(s, i); n > 0 {
				emit("<q>")
				i += n
				continue
			}
		case c == 0xE2 && (i == 0 || !isWord(s[i-1])):
			if n := curlyQuotedAt(s, i); n > 0 {
				emit("<q>")
				i += n
				continue
			}
		case isWord(c) && (i == 0 || !isWord(s[i-1])):
			// An address starts where no part of one goes before it.
			if i == 0 || !isLocal(s[i-1]) {
				if n := emailAt(s, i); n > 0 {
					emit("<email>")
					i += n
					continue
				}
				if n := hostAt(s, i); n > 0 {
					emit("<host>")
					i += n
					continue
				}
			}
			if t, n := tokenAt(s, i); n > 0 {
				emit(t)
				i += n
				continue
			}
		}
		j := i + 1
		for j < len(s) && !isSpace(s[j]) && !startsSomething(s, j) {
			j++
		}
		emit(digitsToN(s, i, j))
		i = j
	}
	return b.String()
}

// startsSomething reports whether position j of s may begin a quote or a
// word, where the plain copy must stop.
func startsSomething(s string, j int) bool {
	c := s[j]
	return c == '"' || c == '`' || c == '\'' && !isWord(s[j-1]) || isWord(c) && !isWord(s[j-1])
}

// digitsToN copies s[i:j], replacing each run of digits (with a decimal
// part) by <n>.
func digitsToN(s string, i, j int) string {
	if !strings.ContainsAny(s[i:j], "0123456789") {
		return s[i:j]
	}
	var b strings.Builder
	for k := i; k < j; {
		if !isDigit(s[k]) {
			b.WriteByte(s[k])
			k++
			continue
		}
		k = skipNumber(s, k, j)
		b.WriteString("<n>")
	}
	return b.String()
}

// skipNumber returns the end of the number at k (digits, then "." and
// digits), not past j.
func skipNumber(s string, k, j int) int {
	for k < j && isDigit(s[k]) {
		k++
	}
	if k+1 < j && s[k] == '.' && isDigit(s[k+1]) {
		k++
		for k < j && isDigit(s[k]) {
			k++
		}
	}
	return k
}

// tokenAt classifies the word starting at i: a UUID, a timestamp, date or
// clock time, a 0x number, a hex run, a long id, or a word whose digit
// runs become <n>. It returns the replacement and the bytes consumed.
func tokenAt(s string, i int) (string, int) {
	if n := uuidAt(s, i); n > 0 {
		return "<uuid>", n
	}
	if n := timeAt(s, i); n > 0 {
		return "<time>", n
	}
	if n := hex0xAt(s, i); n > 0 {
		return "<n>", n
	}
	j := i
	for j < len(s) && (isWord(s[j]) || s[j] == '-') {
		j++
	}
	w := s[i:j]
	hex, digit, letter := true, false, false
	for k := 0; k < len(w); k++ {
		c := w[k]
		hex = hex && isHex(c)
		digit = digit || isDigit(c)
		letter = letter || isLetter(c)
	}
	switch {
	case hex && digit && len(w) >= 8:
		return "<n>", j - i
	case len(w) >= 16 && digit && letter:
		return "<id>", j - i
	}
	end := j
	if j > i && isDigit(s[j-1]) {
		end = skipNumber(s, j-1, len(s)) // a decimal part after the word
	}
	return digitsToN(s, i, end), end - i
}

// uuidAt returns 36 if a UUID (8-4-4-4-12 hex digits) ends a word at i.
func uuidAt(s string, i int) int {
	if len(s)-i < 36 || (len(s) > i+36 && isWord(s[i+36])) {
		return 0
	}
	for k := range 36 {
		c := s[i+k]
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return 0
			}
		} else if !isHex(c) {
			return 0
		}
	}
	return 36
}

// timeAt returns the length of a date (YYYY-MM-DD), optionally with a
// clock time, fraction and zone, or of a clock time (H:MM:SS), at i.
func timeAt(s string, i int) int {
	p := &scan{s: s, i: i}
	if p.digits(4) && p.byte('-') && p.digits(2) && p.byte('-') && p.digits(2) {
		date := p.i
		if (p.byte('T') || p.byte(' ')) && p.digits(2) && p.byte(':') && p.digits(2) {
			p.clockRest()
			p.zone()
		} else {
			p.i = date
		}
		return p.end(i)
	}
	p.i = i
	if p.digitsUpTo(2) && p.byte(':') && p.digits(2) && p.byte(':') && p.digits(2) {
		p.fraction()
		return p.end(i)
	}
	return 0
}

// hex0xAt returns the length of a 0x number at i.
func hex0xAt(s string, i int) int {
	if len(s)-i < 3 || s[i] != '0' || s[i+1]|0x20 != 'x' || !isHex(s[i+2]) {
		return 0
	}
	j := i + 2
	for j < len(s) && isHex(s[j]) {
		j++
	}
	if j < len(s) && isWord(s[j]) {
		return 0
	}
	return j - i
}

// maxQuoted bounds a quoted value: a quote not closed within it is text,
// so that a message of unclosed quotes costs linear time.
const maxQuoted = 256

// quotedAt returns the length of the quoted value at i ("…" and '…' with
// backslash escapes, `…` without), 0 if it is not closed within
// maxQuoted bytes.
func quotedAt(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s) && j-i <= maxQuoted; j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1 - i
		}
	}
	return 0
}

// scan reads a timestamp.
type scan struct {
	s string
	i int
}

func (p *scan) byte(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scan) digits(n int) bool {
	if len(p.s)-p.i < n {
		return false
	}
	for k := range n {
		if !isDigit(p.s[p.i+k]) {
			return false
		}
	}
	p.i += n
	return true
}

func (p *scan) digitsUpTo(n int) bool {
	k := 0
	for k < n && p.i+k < len(p.s) && isDigit(p.s[p.i+k]) {
		k++
	}
	p.i += k
	return k > 0
}

// clockRest reads ":SS" and a fraction after "HH:MM", if there.
func (p *scan) clockRest() {
	at := p.i
	if p.byte(':') && p.digits(2) {
		p.fraction()
		return
	}
	p.i = at
}

func (p *scan) fraction() {
	at := p.i
	if (p.byte('.') || p.byte(',')) && p.digitsUpTo(9) {
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
		return
	}
	p.i = at
}

func (p *scan) zone() {
	if p.byte('Z') {
		return
	}
	at := p.i
	if (p.byte('+') || p.byte('-')) && p.digits(2) {
		p.byte(':')
		if p.digits(2) {
			return
		}
	}
	p.i = at
}

// end returns the length read from start if it ends a word, else 0.
func (p *scan) end(start int) int {
	if p.i < len(p.s) && isWord(p.s[p.i]) {
		return 0
	}
	return p.i - start
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }
func isWord(c byte) bool   { return isDigit(c) || isLetter(c) || c == '_' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// cut returns the first MaxInput bytes of s, not splitting a UTF-8
// sequence.
func cut(s string) string {
	if len(s) <= MaxInput {
		return s
	}
	i := MaxInput
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
