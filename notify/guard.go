package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Resolver resolves host names; *net.Resolver satisfies it. Tests inject
// their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// refusedRange is a range of addresses no notification goes to.
type refusedRange struct {
	prefix netip.Prefix
	name   string
}

var refusedRanges = func() []refusedRange {
	var out []refusedRange
	for _, r := range []struct{ cidr, name string }{
		{"0.0.0.0/8", "unspecified (this network)"},
		{"127.0.0.0/8", "loopback"},
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"100.64.0.0/10", "CGNAT"},
		{"169.254.0.0/16", "link-local"},
		{"192.0.0.0/24", "IETF protocol assignment"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"fc00::/7", "IPv6 unique local (ULA)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, refusedRange{netip.MustParsePrefix(r.cidr), r.name})
	}
	return out
}()

// refusedBy returns the name of the refused range a is in, or "". An
// IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
// (64:ff9b::/96) or 6to4 (2002::/16) address is judged by the IPv4 address
// it carries.
func refusedBy(a netip.Addr) string {
	a = a.WithZone("")
	if a.Is4In6() {
		return mapped(a.Unmap(), "IPv4-mapped")
	}
	if v4, kind, ok := embeddedV4(a); ok {
		if r := refusedBy(v4); r != "" {
			return kind + " " + r
		}
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) {
			return r.name
		}
	}
	if a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "broadcast"
	}
	return ""
}

func mapped(v4 netip.Addr, form string) string {
	if r := refusedBy(v4); r != "" {
		return form + " " + r
	}
	return ""
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// Guard checks every destination of a notification before a request
// (SSRF): only http and https, every resolved address outside the refused
// ranges (loopback, private, link-local, CGNAT, ULA, multicast,
// unspecified, and IPv4-mapped forms of them), unless the host name is on
// the exact-match allow-list. A host is read as the address it spells
// before any lookup, in every form browsers and inet_aton accept ("127.1",
// "2130706433", "0x7f000001", "0177.0.0.1", a trailing dot), and
// "localhost" and the names below it are loopback without a lookup. Its Transport connects to the addresses it
// checked, never resolving again, and its client refuses redirects.
// A Guard is safe for concurrent use.
type Guard struct {
	resolver Resolver
	allow    map[string]bool
	timeout  time.Duration
	refused  func() // counts a refusal; may be nil
}

// NewGuard returns a guard resolving with r (nil: net.DefaultResolver) that
// lets the exact host names in allowHosts (case-insensitive) reach any
// address.
func NewGuard(r Resolver, allowHosts []string) *Guard {
	if r == nil {
		r = net.DefaultResolver
	}
	g := &Guard{resolver: r, allow: map[string]bool{}, timeout: 5 * time.Second}
	for _, h := range allowHosts {
		g.allow[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	return g
}

// Check resolves u's host and returns its addresses if every one of them
// may be reached, or an error wrapping ErrRefused that names the host, the
// address and its range.
func (g *Guard) Check(ctx context.Context, u *url.URL) ([]netip.Addr, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, g.refuse(fmt.Errorf("scheme %q: only http and https are allowed: %w", u.Scheme, ErrRefused))
	}
	return g.resolve(ctx, u.Hostname())
}

func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if host == "" {
		return nil, g.refuse(fmt.Errorf("the URL has no host: %w", ErrRefused))
	}
	var addrs []netip.Addr
	literal, isNumeric, err := parseHostAddr(host)
	switch {
	case err != nil:
		return nil, g.refuse(fmt.Errorf("host %s: %v: %w", host, err, ErrRefused))
	case isNumeric:
		addrs = []netip.Addr{literal}
	case isLocalhost(host) && !g.allow[strings.ToLower(strings.TrimSuffix(host, "."))]:
		return nil, g.refuse(fmt.Errorf("host %s is a loopback name (localhost and the names below it always mean this machine, RFC 6761): %w", host, ErrRefused))
	default:
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no address", host)
		}
	}
	if g.allow[strings.ToLower(strings.TrimSuffix(host, "."))] {
		return addrs, nil
	}
	for _, a := range addrs {
		if r := refusedBy(a); r != "" {
			return nil, g.refuse(fmt.Errorf("host %s resolves to %s, a refused %s address (every address must be public; list a trusted internal host in allowHosts): %w", host, a, r, ErrRefused))
		}
	}
	return addrs, nil
}

func (g *Guard) refuse(err error) error {
	if g.refused != nil {
		g.refused()
	}
	return err
}

// DialContext resolves and checks addr's host, then connects to the
// checked addresses in turn: no second resolution, so a DNS answer that
// changes between the check and the connection (rebinding) cannot redirect
// it.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: g.timeout}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Client returns an HTTP client whose connections go through the guard,
// that uses no proxy, and that does not follow redirects: a redirect to a
// refused address fails with ErrRefused, any other is answered as the
// redirect status (not a success). timeout bounds each request.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if _, err := g.Check(req.Context(), req.URL); err != nil {
				return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
			}
			return http.ErrUseLastResponse
		},
	}
}

// embeddedV4 returns the IPv4 address an IPv6 address a carries, and how:
// IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) or 6to4
// (2002:a.b.c.d::).
func embeddedV4(a netip.Addr) (netip.Addr, string, bool) {
	if !a.Is6() {
		return netip.Addr{}, "", false
	}
	b := a.As16()
	switch {
	case b[0] == 0 && b[1] == 0 && allZero(b[2:12]) && !(b[12] == 0 && b[13] == 0 && b[14] == 0):
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-compatible", true
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && allZero(b[4:12]):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}
