package fingerprint

import "strings"

// Addresses in messages: e-mail addresses and host names vary from one
// failure of a problem to the next ("451 for inv-1@example.com", "451 for
// ord-2@example.com"), so Normalize replaces them with <email> and <host>.

// maxLocal and maxDomain bound the parts of an address (RFC 5321's limits),
// so that a message of near-addresses costs linear time.
const (
	maxLocal  = 64
	maxDomain = 253
)

// isLocal reports the bytes of an e-mail address's local part (without
// quotes): letters, digits and ._%+-.
func isLocal(c byte) bool {
	return isWord(c) || c == '.' || c == '%' || c == '+' || c == '-'
}

// emailAt returns the length of an e-mail address (local@domain, the
// domain of two labels or more) starting at i, 0 if there is none.
func emailAt(s string, i int) int {
	j := i
	for j < len(s) && j-i <= maxLocal && isLocal(s[j]) {
		j++
	}
	if j == i || j >= len(s) || s[j] != '@' || j-i > maxLocal {
		return 0
	}
	n := domainAt(s, j+1, false)
	if n == 0 {
		return 0
	}
	return j + 1 + n - i
}

// hostAt returns the length of a host name at i (with a :port), 0 if
// there is none. A host name is two labels or more of lower-case letters,
// digits and '-', the last a top-level domain (see isTLD), so that Go
// identifiers (io.EOF), file names (main.go) and field paths
// (order.lines) stay as they are.
func hostAt(s string, i int) int {
	n := domainAt(s, i, true)
	if n == 0 {
		return 0
	}
	j := i + n
	if j+1 < len(s) && s[j] == ':' && isDigit(s[j+1]) {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j < len(s) && (isWord(s[j]) || s[j] == '@') {
		return 0
	}
	return j - i
}

// domainAt returns the length of a domain of two labels or more at i. For
// a host (strict) the labels are lower case and the last is a known
// top-level domain; in an e-mail address any letters are, and the last
// label is two letters or more.
func domainAt(s string, i int, strict bool) int {
	labels, j, last := 0, i, i
	for j < len(s) && j-i <= maxDomain {
		k := j
		for k < len(s) && (isLetter(s[k]) || isDigit(s[k]) || s[k] == '-') {
			if strict && 'A' <= s[k] && s[k] <= 'Z' {
				return 0
			}
			k++
		}
		if k == j || s[j] == '-' || s[k-1] == '-' {
			break
		}
		labels++
		last = j
		j = k
		// A dot continues the domain only if a label follows it.
		if j+1 < len(s) && s[j] == '.' && (isLetter(s[j+1]) || isDigit(s[j+1])) {
			j++
			continue
		}
		break
	}
	if labels < 2 || j-i > maxDomain {
		return 0
	}
	tld := s[last:j]
	for k := 0; k < len(tld); k++ {
		if !isLetter(tld[k]) {
			return 0
		}
	}
	if len(tld) < 2 || strict && !isTLD(tld) {
		return 0
	}
	if j < len(s) && s[j] == '_' {
		return 0
	}
	return j - i
}

// tlds are the top-level domains a host name in a message may end with:
// the common generic ones and the names of internal networks. Country
// codes are left out, as two letters are as often a file's extension
// (.go, .md, .sh, .rs).
var tlds = strings.Fields(`com net org edu gov mil int info biz io dev app cloud ai co
	internal local localhost lan corp home arpa svc cluster test example invalid`)

func isTLD(s string) bool {
	for _, t := range tlds {
		if s == t {
			return true
		}
	}
	return false
}

// curlyQuotedAt returns the length of a value in typographic quotes (“…”
// or ‘…’) at i, closed within maxQuoted bytes, 0 if there is none.
func curlyQuotedAt(s string, i int) int {
	var closing string
	switch {
	case strings.HasPrefix(s[i:], "“"):
		closing = "”"
	case strings.HasPrefix(s[i:], "‘"):
		closing = "’"
	default:
		return 0
	}
	rest := s[i+3:]
	if len(rest) > maxQuoted {
		rest = rest[:maxQuoted]
	}
	if k := strings.Index(rest, closing); k >= 0 {
		return 3 + k + len(closing)
	}
	return 0
}
