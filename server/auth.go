package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/api"
)

// CheckBind returns an error wrapping ErrInsecureBind if addr is not a
// loopback address and there are no tokens.
func CheckBind(addr string, tokens []Token) error {
	if len(tokens) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("http address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address and no tokens are configured; configure tokens (--tokens-file or AMENDS_TOKENS) or bind to 127.0.0.1: %w", addr, ErrInsecureBind)
}

// How a principal authenticated.
const (
	viaToken = "token"
	viaOIDC  = "oidc"
	viaLocal = "local"
)

// principal is who sent a request.
type principal struct {
	name string
	role Role
	// via is how it authenticated: viaToken, viaOIDC or viaLocal.
	via string
	// subject identifies an OIDC principal: issuer and subject.
	subject string
	// expires, if not zero, ends it (a token's expiry, a JWT's exp).
	expires time.Time
}

// key identifies the principal's credential: the sessions of one key are
// counted together, and end together when it is revoked.
func (p principal) key() string {
	switch p.via {
	case viaOIDC:
		return "oidc:" + p.subject
	case viaLocal:
		return viaLocal
	}
	return "token:" + p.name
}

// credential is the kind of credential p presented; in a session, the
// session's kind of the credential it was made from.
func (p principal) credential(inSession bool) api.AuditCredential {
	c := api.AuditCredential(p.via)
	if inSession {
		c = "session:" + c
	}
	if !slices.Contains(api.AuditCredentials, c) {
		return api.CredentialSession
	}
	return c
}

// LocalActor is the actor of requests to a server without tokens.
const LocalActor = "local"

var localPrincipal = principal{name: LocalActor, role: RoleOperator, via: viaLocal}

// allows reports whether a principal of role p may act as role need.
func (p principal) allows(need Role) bool {
	return need == RoleViewer || p.role == RoleOperator
}

// safeMethod reports whether m changes nothing (RFC 9110 §9.2.1).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameOrigin reports whether r may come from the page that is served at
// r's host: it has no Origin (not a browser's cross-origin request) or an
// Origin whose host is r's host, and the browser did not mark it as sent
// from another site (Sec-Fetch-Site). The scheme is not compared, so that
// a TLS-terminating proxy in front of the server does not break sign-in.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" and the like
	}
	return strings.EqualFold(u.Host, r.Host)
}

// fromBrowser reports whether r carries what only browsers send: an
// Origin, Sec-Fetch-* headers or a cookie.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Cookie") != ""
}

// authorize finds r's principal and checks it may act as role need,
// writing the error response and returning false if not:
//
//   - a client address over its budget of failed authentications is
//     refused (429 with Retry-After) before its credentials are looked at;
//   - a state-changing request from another origin is refused (403
//     CrossOrigin), however it authenticates;
//   - a request without an Authorization header that carries a live
//     session cookie acts as the session's principal; if it changes
//     state it must come from the dashboard's origin and carry the
//     session's CSRF token in X-CSRF-Token (403 CSRF otherwise);
//   - without tokens configured, a state-changing request from a browser
//     needs such a session too (the dashboard makes one on loopback), so
//     that no other page the browser shows can steer records;
//   - otherwise the bearer token decides: one of the tokens, or with OIDC
//     a JWT of the issuer (401, 403).
//
// A failed authentication counts against the client's budget and goes to
// the audit log. The returned request's context ends when the session
// ends (sign-out, revocation of its token) or the credential expires, so
// that a live stream stops with it.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, need Role) (*http.Request, principal, func(), bool) {
	ri := info(r)
	if wait, blocked := s.limits.blocked(ri.client, s.now()); blocked {
		tooMany(w, wait, "too many failed authentications from this address")
		return r, principal{}, nil, false
	}
	unsafe := !safeMethod(r.Method)
	if unsafe && !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, api.Error{Code: "CrossOrigin",
			Message: "this request came from another site (its Origin is not this server's); state-changing requests are taken only from the dashboard's own pages"})
		return r, principal{}, nil, false
	}
	if r.Header.Get("Authorization") == "" {
		id, sess, present, ok := s.sessionOf(r)
		if ok {
			if unsafe && (r.Header.Get("Origin") == "" || !checkCSRF(id, r.Header.Get(CSRFHeader))) {
				writeJSON(w, http.StatusForbidden, api.Error{Code: "CSRF",
					Message: "the request has no valid " + CSRFHeader + " header for this session; reload the dashboard and try again"})
				return r, principal{}, nil, false
			}
			if !s.allow(w, sess.principal, need) {
				return r, principal{}, nil, false
			}
			r, done := s.live(r, sess.principal, sessionKey(id), sess.expires)
			return r, sess.principal, done, true
		}
		if present {
			s.authFailed(r, api.CredentialSession, "unknown or expired session")
		}
		if unsafe && s.tokenless() && fromBrowser(r) {
			writeJSON(w, http.StatusForbidden, api.Error{Code: "CSRF",
				Message: "a browser's state-changing request needs a dashboard session and its " + CSRFHeader + " header; reload the dashboard and try again"})
			return r, principal{}, nil, false
		}
	}
	p, err := s.authenticate(r)
	if err != nil {
		ae, ok := err.(*apiError)
		if !ok {
			ae = unauthorized("the credential was refused")
		}
		if ae.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="amends"`)
		}
		writeJSON(w, ae.status, ae.body)
		return r, principal{}, nil, false
	}
	if !s.allow(w, p, need) {
		return r, principal{}, nil, false
	}
	r, done := s.live(r, p, "", p.expires)
	return r, p, done, true
}

// authenticate finds the principal of r's Authorization header: the local
// operator on a server without tokens or OIDC, else a bearer token or JWT.
// Its error is the *apiError to answer.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	if s.tokenless() {
		return localPrincipal, nil
	}
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	// The scheme is case-insensitive (RFC 7235 §2.1).
	scheme, secret, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return principal{}, unauthorized("missing bearer token; send Authorization: Bearer <token> (AMENDS_TOKEN for the CLI) or sign in to the dashboard")
	}
	secret = strings.TrimSpace(secret)
	if len(secret) > maxBearerBytes {
		s.authFailed(r, bearerKind(secret), "bearer token over the size limit")
		return principal{}, unauthorized(fmt.Sprintf("the bearer token is over the limit of %d bytes", maxBearerBytes))
	}
	p, expired, ok := s.keys.Load().match(secret, s.now())
	switch {
	case ok:
		return p, nil
	case expired:
		s.authFailed(r, api.CredentialToken, "expired token")
		return principal{}, unauthorized("this token has expired; ask for a new one")
	}
	if s.oidc != nil && looksLikeJWT(secret) {
		p, err := s.oidc.verifyBearer(r.Context(), secret)
		if err == nil {
			return p, nil
		}
		if ae, ok := err.(*apiError); ok {
			if ae.status == http.StatusForbidden {
				s.authFailed(r, api.CredentialOIDC, "JWT without an amends role")
			}
			return principal{}, err // 503: the issuer is unreachable; 403: no role
		}
		s.authFailed(r, api.CredentialOIDC, "JWT refused: "+err.Error())
		return principal{}, unauthorized("the bearer JWT was refused: " + err.Error())
	}
	s.authFailed(r, api.CredentialToken, "unknown token")
	return principal{}, unauthorized("unknown bearer token; send Authorization: Bearer <token> (AMENDS_TOKEN for the CLI) or sign in to the dashboard")
}

// maxBearerBytes bounds a bearer value (a JWT with many claims fits).
const maxBearerBytes = 8 << 10

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, body: api.Error{Code: "Unauthorized", Message: msg}}
}

// bearerKind is the kind of credential a bearer value looks like.
func bearerKind(secret string) api.AuditCredential {
	if looksLikeJWT(secret) {
		return api.CredentialOIDC
	}
	return api.CredentialToken
}

// looksLikeJWT reports whether a bearer value has a JWS's three parts.
func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 }

// tokenless reports whether the server authenticates nobody: it started
// with no tokens and no OIDC (the loopback local mode, whose checks run at
// start-up) and has no tokens since.
func (s *Server) tokenless() bool { return s.open && len(s.keys.Load().tokens) == 0 }

// allow checks that p may act as role need, answering 403 if not.
func (s *Server) allow(w http.ResponseWriter, p principal, need Role) bool {
	if !p.allows(need) {
		writeJSON(w, http.StatusForbidden, api.Error{Code: "Forbidden", Message: "token " + p.name + " has role " + string(p.role) + "; this request needs the " + string(need) + " role"})
		return false
	}
	return true
}

// live returns r with p as its requester and a context that ends when the
// session of key (if not "") or p's credential is revoked, or at expires;
// done ends it when the request is served.
func (s *Server) live(r *http.Request, p principal, key string, expires time.Time) (*http.Request, func()) {
	ri := *info(r)
	ri.who, ri.session = &p, key != ""
	ctx := context.WithValue(r.Context(), infoKey{}, &ri)
	ctx, cancel := context.WithCancel(ctx)
	if !expires.IsZero() {
		// expires is on the server's clock; the deadline is on the
		// system's.
		ctx, cancel = withDeadline(ctx, cancel, time.Now().Add(expires.Sub(s.now())))
	}
	keys := []string{p.key()}
	if key != "" {
		keys = append(keys, key)
	}
	remove := s.requests.add(keys, cancel)
	return r.WithContext(ctx), func() { remove(); cancel() }
}

// withDeadline adds a deadline to ctx, keeping both cancels.
func withDeadline(ctx context.Context, cancel context.CancelFunc, at time.Time) (context.Context, context.CancelFunc) {
	dctx, dcancel := context.WithDeadline(ctx, at)
	return dctx, func() { dcancel(); cancel() }
}

// authFailed counts a failed authentication of r against its client's
// budget, logs the client that goes over it and writes the failure, with
// the kind of credential refused, to the audit log.
func (s *Server) authFailed(r *http.Request, cred api.AuditCredential, reason string) {
	ri := info(r)
	now := s.now()
	if s.limits.fail(ri.client, now) {
		s.log.Warn("authentication: too many failures from a client; refusing its requests for a while",
			"client", ri.clientString(), "retry_after", s.limits.cfg.FailureEvery.String(), "last_reason", reason)
		s.audit(r, api.AuditEntry{Kind: api.AuditRateLimited, Credential: cred, Reason: reason})
	}
	s.audit(r, api.AuditEntry{Kind: api.AuditAuthFailure, Credential: cred, Reason: reason})
}

// tooMany answers 429 with Retry-After (whole seconds, at least 1).
func tooMany(w http.ResponseWriter, wait time.Duration, what string) {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeJSON(w, http.StatusTooManyRequests, api.Error{Code: "TooManyRequests",
		Message: fmt.Sprintf("%s; try again in %d s", what, secs), Details: map[string]any{"retryAfter": secs}})
}
