package notify

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// parseHostAddr reads a URL's host as the address it spells, the way
// browsers, curl and the C library's inet_aton read it, so that no
// spelling of an address reaches the resolver as a name:
//
//   - an IPv6 or dotted-decimal IPv4 address, with or without a trailing
//     dot;
//   - the short and numeric IPv4 forms of inet_aton and the WHATWG URL
//     standard: one to four parts, each decimal, octal with a leading 0
//     or hexadecimal with 0x, the last part filling the remaining bytes
//     ("127.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.0.0.1.").
//
// numeric is false for a host name. A host whose last label is a number
// but that is no valid address ("1.2.3.256", "0x", "1.2.3.4.5") is an
// error: the URL standard calls it an invalid host, and a resolver might
// still answer for it.
func parseHostAddr(host string) (addr netip.Addr, numeric bool, err error) {
	h := strings.TrimSuffix(host, ".")
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return a, true, nil
	}
	parts := strings.Split(h, ".")
	if _, ok := ipv4Part(parts[len(parts)-1]); !ok && !looksNumeric(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil // a name
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, errors.New("its last label is a number but it is no IPv4 address (more than four parts)")
	}
	var n uint64
	for i, p := range parts {
		v, ok := ipv4Part(p)
		if !ok {
			return netip.Addr{}, true, errors.New("its last label is a number but it is no IPv4 address (part " + strconv.Quote(p) + " is not a decimal, octal or hex number)")
		}
		if i < len(parts)-1 {
			if v > 255 {
				return netip.Addr{}, true, errors.New("its last label is a number but it is no IPv4 address (part " + strconv.Quote(p) + " is over 255)")
			}
			n = n<<8 | v
			continue
		}
		rest := 4 - i // bytes the last part fills
		if v >= 1<<(8*rest) {
			return netip.Addr{}, true, errors.New("its last label is a number but it is no IPv4 address (it is over 32 bits)")
		}
		n = n<<(8*rest) | v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true, nil
}

// ipv4Part reads one part of a numeric IPv4 host: 0x... hexadecimal
// (0x alone is 0), 0... octal, else decimal; at most 32 bits.
func ipv4Part(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	for i := 0; i < len(p); i++ {
		if !isDigitIn(p[i], base) {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(p, base, 64)
	if err != nil || v > 1<<32-1 {
		return 0, false
	}
	return v, true
}

func isDigitIn(c byte, base int) bool {
	switch base {
	case 8:
		return c >= '0' && c <= '7'
	case 10:
		return c >= '0' && c <= '9'
	}
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// looksNumeric reports whether a label is made of digits only (a number
// too large or an octal with 8 or 9 in it is still meant as one).
func looksNumeric(label string) bool {
	if label == "" {
		return false
	}
	if len(label) >= 2 && (label[:2] == "0x" || label[:2] == "0X") {
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return true
}

// isLocalhost reports whether host is "localhost" or a name below it,
// which RFC 6761 reserves for loopback.
func isLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
