package server

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// hostList is the Host allow-list of a server: the names a browser may
// reach it by. It is the defence against DNS rebinding, where a page of
// another site makes its own name resolve to this server's address and
// then reads it as the same origin: such a request carries the other
// site's name in its Host header.
type hostList struct {
	any      bool
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
}

// newHostList returns the allow-list of names: exact host names, "*.name"
// for every name below name, or "*" for any host. IP literals and
// "localhost" are always allowed: a rebinding page's Host is a name its
// attacker controls, never an address, and "localhost" resolves to
// loopback on every browser.
func newHostList(names []string) *hostList {
	h := &hostList{exact: map[string]bool{"localhost": true}}
	for _, n := range names {
		n = normalHost(n)
		switch {
		case n == "*":
			h.any = true
		case strings.HasPrefix(n, "*.") && len(n) > 2:
			h.suffixes = append(h.suffixes, n[1:])
		case n != "":
			h.exact[n] = true
		}
	}
	return h
}

// CheckAllowedHost checks an entry of Config.AllowedHosts (and of serve's
// --http-allowed-host): a host name without port, scheme or path,
// "*.name" or "*". The error says what is wrong.
func CheckAllowedHost(s string) error {
	n := normalHost(s)
	switch {
	case n == "*":
		return nil
	case n == "" || strings.HasPrefix(n, "*.") && len(n) == 2:
		return fmt.Errorf("allowed host %q is empty; give a host name such as amends.example.com, *.example.com or *", s)
	case isIPLiteral(n):
		return nil // always allowed anyway
	case strings.ContainsAny(n, "/:@[] "):
		return fmt.Errorf("allowed host %q is not a host name: give the name alone, without scheme, port or path (amends.example.com)", s)
	}
	name := strings.TrimPrefix(n, "*.")
	if len(name) > 253 {
		return fmt.Errorf("allowed host %q is over 253 characters", s)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("allowed host %q has an empty or over-long label; give a host name such as amends.example.com", s)
		}
		if i := strings.IndexFunc(label, notHostRune); i >= 0 {
			return fmt.Errorf("allowed host %q has the character %q; host names are letters, digits, '-' and '.' (IP addresses are always allowed)", s, label[i])
		}
	}
	return nil
}

// notHostRune reports whether r is not allowed in a normalised host
// name's label: [a-z0-9_-].
func notHostRune(r rune) bool {
	return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-_", r)
}

// normalHost lowers a host name and drops a trailing dot.
func normalHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "*." {
		return s // not "*": an empty suffix, which CheckAllowedHost refuses
	}
	return strings.TrimSuffix(s, ".")
}

// allows reports whether a request's Host header (host or host:port) names
// this server. An empty Host (HTTP/1.0, which no browser sends) is
// allowed.
func (h *hostList) allows(hostHeader string) bool {
	if h.any || hostHeader == "" {
		return true
	}
	host := hostHeader
	if hp, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = hp
	}
	if isIPLiteral(host) {
		return true
	}
	host = normalHost(host)
	if h.exact[host] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(host, s) && len(host) > len(s) {
			return true
		}
	}
	return false
}

// isIPLiteral reports whether host is an IP address, bracketed or not.
func isIPLiteral(host string) bool {
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil
}
