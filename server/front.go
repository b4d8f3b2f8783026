package server

import (
	"context"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/api"
)

// HSTSMaxAge is the max-age of the Strict-Transport-Security header a
// server sends on every answer to a request that came over TLS (directly
// or through a trusted proxy): one year.
const HSTSMaxAge = 365 * 24 * 60 * 60

// requestInfo is what the front handler learnt of a request, kept in its
// context: the client's address (the peer's, or the one a trusted proxy
// forwarded) and whether the client reached the server over TLS.
type requestInfo struct {
	client netip.Addr
	secure bool
	// who is set once the request is authenticated; session when it
	// authenticated by a dashboard session.
	who     *principal
	session bool
}

type infoKey struct{}

// info returns r's requestInfo (the zero info for a request the front
// handler did not see).
func info(r *http.Request) *requestInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{client: peerAddr(r), secure: r.TLS != nil}
}

// Requester is who sent a request, as the server authenticated it: the
// actor name recorded on its commands, its role and the client's address.
type Requester struct {
	Name   string
	Role   Role
	Client string
	// Credential is the kind of credential it presented (for the audit
	// log).
	Credential api.AuditCredential
}

// RequesterFrom returns the requester of a request the server
// authenticated, from the request's context (a Dashboard's ServeData
// reads it to audit what it serves). ok is false outside such a request.
func RequesterFrom(ctx context.Context) (Requester, bool) {
	ri, ok := ctx.Value(infoKey{}).(*requestInfo)
	if !ok || ri.who == nil {
		return Requester{}, false
	}
	return Requester{Name: ri.who.name, Role: ri.who.role, Client: ri.clientString(), Credential: ri.who.credential(ri.session)}, true
}

func (ri *requestInfo) clientString() string {
	if !ri.client.IsValid() {
		return ""
	}
	return ri.client.String()
}

// front is the server's handler: before any route it checks what every
// request must satisfy and sets the headers every answer carries.
//
//   - Every answer has X-Content-Type-Options: nosniff and Cache-Control:
//     no-store (the dashboard's pages and assets set their own caching),
//     and, to a client on TLS, Strict-Transport-Security.
//   - The Host header must name this server (Config.AllowedHosts; 421
//     MisdirectedRequest otherwise), so that a page of another site that
//     rebinds its name to this server's address reads nothing.
//   - A request's body must arrive within Config.BodyTimeout.
//   - The path must be canonical: no "..", "." or empty segments (400,
//     not a redirect to somewhere the client did not ask for).
func (s *Server) front(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		// A body is due within the body timeout, read or not: the server
		// reads an unread body before it answers, so an early refusal
		// must not wait for one that dribbles in either (see readBody).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	}
	ri := s.requestInfo(r)
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if ri.secure {
		h.Set("Strict-Transport-Security", "max-age="+strconv.Itoa(HSTSMaxAge))
	}
	if !s.hosts.allows(r.Host) {
		writeJSON(w, http.StatusMisdirectedRequest, api.Error{Code: "MisdirectedRequest",
			Message: "this server does not answer to the host name " + quote(r.Host) + " (the Host header); reach it by an address or a name it was started with (serve --http-allowed-host NAME)",
			Details: map[string]any{"field": "Host"}})
		return
	}
	if p := r.URL.Path; p != "" && p != canonicalPath(p) {
		writeJSON(w, http.StatusBadRequest, api.Error{Code: "BadRequest",
			Message: "the path " + quote(p) + " is not canonical (it has \"..\", \".\" or empty segments); send " + quote(canonicalPath(p)),
			Details: map[string]any{"field": "path"}})
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), infoKey{}, ri)))
}

// canonicalPath cleans p as the router would, keeping a trailing slash.
func canonicalPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// requestInfo finds r's client address and whether it came over TLS.
// Only a peer in Config.TrustedProxies is believed about the client: its
// X-Forwarded-For (the last address before the trusted proxies) and its
// X-Forwarded-Proto (the last value). Any other peer's forwarding headers
// are ignored.
func (s *Server) requestInfo(r *http.Request) *requestInfo {
	peer := peerAddr(r)
	ri := &requestInfo{client: peer, secure: r.TLS != nil}
	if !s.trusted(peer) {
		return ri
	}
	if proto := lastListValue(r.Header.Values("X-Forwarded-Proto")); proto != "" {
		ri.secure = ri.secure || strings.EqualFold(proto, "https")
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(v, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := parseForwardedAddr(hops[i])
		if err != nil {
			break // a malformed hop: trust nothing beyond it
		}
		ri.client = a
		if !s.trusted(a) {
			break
		}
	}
	return ri
}

// trusted reports whether a is a trusted proxy.
func (s *Server) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the address of r's peer (RemoteAddr), IPv4-mapped addresses
// unmapped; invalid if RemoteAddr holds none.
func peerAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(r.RemoteAddr)
	return a.Unmap()
}

// parseForwardedAddr reads one hop of X-Forwarded-For: an address, with or
// without a port, IPv6 possibly bracketed.
func parseForwardedAddr(s string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), nil
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return a.Unmap(), err
}

// lastListValue is the last element of a comma-separated header.
func lastListValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	last := vs[len(vs)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.TrimSpace(last)
}
