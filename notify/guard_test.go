package notify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeResolver answers from a map and counts lookups.
type fakeResolver struct {
	hosts   map[string][]string
	lookups atomic.Int64
	mu      sync.Mutex
	byHost  map[string]int
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byHost[host]
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.lookups.Add(1)
	r.mu.Lock()
	if r.byHost == nil {
		r.byHost = map[string]int{}
	}
	r.byHost[host]++
	r.mu.Unlock()
	addrs, ok := r.hosts[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestGuardRefusesEveryRange(t *testing.T) {
	for addr, rng := range map[string]string{
		"127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback",
		"10.1.2.3": "private", "172.16.0.1": "private", "172.31.255.254": "private", "192.168.1.1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local",
		"100.64.0.1": "CGNAT", "100.127.255.254": "CGNAT",
		"fc00::1": "ULA", "fd12:3456::1": "ULA",
		"224.0.0.1": "multicast", "239.255.255.250": "multicast", "ff02::1": "multicast",
		"0.0.0.0": "unspecified", "::": "unspecified",
		"::ffff:127.0.0.1": "IPv4-mapped loopback", "::ffff:10.0.0.1": "IPv4-mapped private",
		"::ffff:169.254.169.254": "IPv4-mapped link-local", "::ffff:100.64.0.1": "IPv4-mapped CGNAT",
		"::ffff:0.0.0.0": "IPv4-mapped unspecified", "::ffff:224.0.0.1": "IPv4-mapped multicast",
		"::127.0.0.1": "IPv4-compatible loopback", "64:ff9b::a00:1": "NAT64 private", "2002:c0a8:101::1": "6to4 private",
		"255.255.255.255": "reserved",
	} {
		t.Run(addr, func(t *testing.T) {
			g := NewGuard(&fakeResolver{hosts: map[string][]string{"hooks.example.com": {addr}}}, nil)
			_, err := g.Check(t.Context(), mustURL(t, "https://hooks.example.com/x"))
			require.ErrorIs(t, err, ErrRefused, "%s must be refused", addr)
			assert.Contains(t, err.Error(), rng)
			assert.Contains(t, err.Error(), "hooks.example.com")

			// An IP literal in the URL is checked the same way.
			host := addr
			if strings.Contains(addr, ":") {
				host = "[" + addr + "]"
			}
			_, err = g.Check(t.Context(), mustURL(t, "http://"+host+"/x"))
			require.ErrorIs(t, err, ErrRefused, "literal %s must be refused", addr)
		})
	}
}

func TestGuardChecksEveryAddress(t *testing.T) {
	r := &fakeResolver{hosts: map[string][]string{
		"public.example.com":   {"93.184.216.34", "2606:2800:220:1::1"},
		"mixed.example.com":    {"93.184.216.34", "10.0.0.7"},
		"internal.example.com": {"10.0.0.8"},
	}}
	refused := 0
	g := NewGuard(r, []string{"Internal.Example.com"})
	g.refused = func() { refused++ }

	addrs, err := g.Check(t.Context(), mustURL(t, "https://public.example.com/hook"))
	require.NoError(t, err, "public addresses pass")
	assert.Len(t, addrs, 2)

	_, err = g.Check(t.Context(), mustURL(t, "https://mixed.example.com/hook"))
	require.ErrorIs(t, err, ErrRefused, "one private address among public ones refuses the host")
	assert.Contains(t, err.Error(), "10.0.0.7")

	_, err = g.Check(t.Context(), mustURL(t, "https://internal.example.com/hook"))
	require.NoError(t, err, "an allowed host name reaches a private address")
	_, err = g.Check(t.Context(), mustURL(t, "https://internal.example.com.evil.net/hook"))
	require.Error(t, err, "the allow-list matches exactly, not by prefix")

	for _, u := range []string{"file:///etc/passwd", "ftp://public.example.com/x", "gopher://public.example.com/", "javascript:alert(1)"} {
		_, err = g.Check(t.Context(), mustURL(t, u))
		require.ErrorIs(t, err, ErrRefused, "%s", u)
		assert.Contains(t, err.Error(), "only http and https")
	}
	assert.Equal(t, 5, refused, "every refusal is counted (a failed lookup is not one)")
}

func TestGuardDialsTheCheckedAddressOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(srv.Close)
	port := portOf(srv)
	r := &fakeResolver{hosts: map[string][]string{"receiver.test": {"127.0.0.1"}, "rebind.test": {"127.0.0.1"}}}
	g := NewGuard(r, []string{"receiver.test"})
	c := g.Client(5 * time.Second)
	c.Transport.(*http.Transport).DisableKeepAlives = true

	resp, err := c.Get("http://receiver.test:" + port + "/")
	require.NoError(t, err, "an allowed host on loopback is reached")
	resp.Body.Close()
	assert.Equal(t, 204, resp.StatusCode)
	assert.EqualValues(t, 1, r.lookups.Load(), "one resolution per connection: the checked address is dialled")

	_, err = c.Get("http://rebind.test:" + port + "/")
	require.ErrorIs(t, err, ErrRefused, "a host not on the allow-list cannot reach loopback")
}

func TestGuardRefusesRedirectsToRefusedAddresses(t *testing.T) {
	target := "http://metadata.test/latest"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	port := portOf(srv)
	r := &fakeResolver{hosts: map[string][]string{"receiver.test": {"127.0.0.1"}, "metadata.test": {"169.254.169.254"}, "elsewhere.test": {"93.184.216.34"}}}
	g := NewGuard(r, []string{"receiver.test"})
	c := g.Client(5 * time.Second)

	_, err := c.Get("http://receiver.test:" + port + "/")
	require.ErrorIs(t, err, ErrRefused, "a redirect to a link-local address is refused")
	assert.Contains(t, err.Error(), "169.254.169.254")

	target = "http://elsewhere.test/x"
	resp, err := c.Get("http://receiver.test:" + port + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode, "no redirect is followed, even to a public address")
	assert.Equal(t, 1, r.count("elsewhere.test"), "the public target was checked once, never dialled")
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// Short, numeric, octal and hex spellings of IPv4 addresses, and the
// loopback names, are read as what they are and refused without a lookup;
// they used to go to the resolver as names (and fail as NotificationFailed
// only because none resolved).
func TestGuardReadsEverySpellingOfAnAddress(t *testing.T) {
	r := &fakeResolver{hosts: map[string][]string{}}
	g := NewGuard(r, nil)
	for host, rng := range map[string]string{
		"127.1": "loopback", "2130706433": "loopback", "0x7f000001": "loopback", "0X7F000001": "loopback",
		"0177.0.0.1": "loopback", "0177.1": "loopback", "127.0.0.1.": "loopback", "127.0x0.0.01": "loopback",
		"10.1": "private", "167772161": "private", "012.0.0.1": "private", "0xa.0.0.1": "private",
		"169.254.43518": "link-local", "0xA9FEA9FE": "link-local", "0": "unspecified",
		"localhost": "loopback name", "localhost.": "loopback name", "LOCALHOST": "loopback name", "api.localhost": "loopback name",
		"[::1]": "loopback",
	} {
		t.Run(host, func(t *testing.T) {
			_, err := g.Check(t.Context(), mustURL(t, "http://"+host+":8080/hook"))
			require.ErrorIs(t, err, ErrRefused, "%s must be refused", host)
			assert.Contains(t, err.Error(), rng)
		})
	}
	for _, host := range []string{"1.2.3.256", "1.2.3.4.5", "4294967296", "0x1g.1", "09.1.1.1", "1.2.3.0x100"} {
		_, err := g.Check(t.Context(), mustURL(t, "http://"+host+"/hook"))
		require.ErrorIs(t, err, ErrRefused, "%s is no address and no name: refused", host)
		assert.Contains(t, err.Error(), "no IPv4 address")
	}
	assert.Zero(t, r.lookups.Load(), "no spelling of an address reached the resolver")

	// Public addresses spelled short pass, as their dotted form would.
	addrs, err := g.Check(t.Context(), mustURL(t, "http://1570299906/hook"))
	require.NoError(t, err)
	assert.Equal(t, "93.152.224.2", addrs[0].String())
	addrs, err = g.Check(t.Context(), mustURL(t, "http://8.8.2056/hook"))
	require.NoError(t, err)
	assert.Equal(t, "8.8.8.8", addrs[0].String())

	// Names are still names, including ones with digits.
	r.hosts["1password.example"] = []string{"93.184.216.34"}
	r.hosts["hooks.123"] = nil
	_, err = g.Check(t.Context(), mustURL(t, "http://1password.example/hook"))
	require.NoError(t, err)
	// An allow-listed loopback name reaches loopback (a receiver on this
	// machine, by choice).
	r.hosts["localhost"] = []string{"127.0.0.1"}
	_, err = NewGuard(r, []string{"localhost"}).Check(t.Context(), mustURL(t, "http://localhost:9000/hook"))
	require.NoError(t, err)
}
