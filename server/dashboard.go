package server

import (
	"net/http"
	"strings"

	"github.com/amends-dev/amends/api"
)

// Dashboard is the browser UI a Server mounts next to the API (package
// dashboard implements it). The server authenticates and authorizes; the
// dashboard only serves.
type Dashboard interface {
	// ServePage serves the pages and their assets (GET /, /search,
	// /record, /fingerprints, /signin, /assets/...). They hold no data, so they need no
	// sign-in; the data comes from the API and ServeData.
	ServePage(w http.ResponseWriter, r *http.Request)
	// ServeData serves GET /ui/v1/... (live counts, backlog, event bodies,
	// schedules) to a principal with at least the viewer role.
	ServeData(w http.ResponseWriter, r *http.Request)
}

// dashboardRoutes are the routes of cfg.Dashboard; none without one.
func (s *Server) dashboardRoutes() []route {
	d := s.cfg.Dashboard
	if d == nil {
		return nil
	}
	page := func(w http.ResponseWriter, r *http.Request, _ principal) error {
		d.ServePage(w, r)
		return nil
	}
	data := func(w http.ResponseWriter, r *http.Request, _ principal) error {
		d.ServeData(w, r)
		return nil
	}
	return []route{
		{method: "GET", pattern: "/{$}", handler: page},
		{method: "GET", pattern: "/search", handler: page},
		{method: "GET", pattern: "/record", handler: page},
		{method: "GET", pattern: "/fingerprints", handler: page},
		{method: "GET", pattern: "/circuits", handler: page},
		{method: "GET", pattern: "/circuits/{function}", handler: page},
		{method: "GET", pattern: "/holds", handler: page},
		{method: "GET", pattern: "/audit", handler: page},
		{method: "GET", pattern: "/archive", handler: page},
		{method: "GET", pattern: "/signin", handler: page},
		{method: "GET", pattern: "/assets/{file...}", handler: page},
		{method: "GET", pattern: "/ui/v1/session", handler: s.whoami},
		{method: "POST", pattern: "/ui/v1/session", handler: s.signIn},
		{method: "DELETE", pattern: "/ui/v1/session", handler: s.signOut},
		{method: "GET", pattern: "/ui/v1/oidc/start", handler: s.oidcStart},
		{method: "GET", pattern: OIDCCallbackPath, handler: s.oidcCallback},
		{method: "GET", pattern: "/ui/v1/{data...}", role: RoleViewer, handler: data},
	}
}

// SessionInfo is the body of GET and POST /ui/v1/session: who the browser
// is signed in as and the CSRF token its state-changing requests carry.
// It never holds the bearer token.
type SessionInfo struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
	CSRF string `json:"csrf"`
	// Local is true on a server without tokens: no sign-in is needed.
	Local bool `json:"local,omitempty"`
	// Expires is when the session ends, epoch ms.
	Expires int64 `json:"expires,omitempty"`
}

// noStore marks a response as private to this browser.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// whoami answers the browser's session. Without tokens it starts a local
// session, so the dashboard works on loopback without sign-in as the API
// does. Unsigned, its 401 says how to sign in (details.signIn: "token",
// and "oidc" with details.oidcStart when the server signs in through an
// issuer).
func (s *Server) whoami(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	if err := noQuery(r); err != nil {
		return err
	}
	if wait, blocked := s.limits.blocked(info(r).client, s.now()); blocked {
		tooMany(w, wait, "too many failed authentications from this address")
		return nil
	}
	id, sess, present, ok := s.sessionOf(r)
	if ok {
		writeJSON(w, http.StatusOK, SessionInfo{Name: sess.name, Role: sess.role, CSRF: csrfOf(id), Local: sess.via == viaLocal, Expires: sess.expires.UnixMilli()})
		return nil
	}
	if present {
		s.authFailed(r, api.CredentialSession, "unknown or expired session")
	}
	if s.tokenless() {
		return s.startSession(w, r, localPrincipal)
	}
	ways := []string{"token"}
	details := map[string]any{}
	if s.oidc != nil && s.oidc.cfg.ClientID != "" {
		ways = append(ways, "oidc")
		details["oidcStart"] = "/ui/v1/oidc/start"
	}
	details["signIn"] = ways
	writeJSON(w, http.StatusUnauthorized, api.Error{Code: "Unauthorized", Message: "not signed in; sign in at /signin", Details: details})
	return nil
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, p principal) error {
	id, sess, err := s.sessions.create(r.Context(), p)
	if err != nil {
		return err
	}
	http.SetCookie(w, sessionCookie(r, id, max(1, int(sess.expires.Sub(s.now()).Seconds()))))
	writeJSON(w, http.StatusOK, SessionInfo{Name: p.name, Role: p.role, CSRF: csrfOf(id), Local: p.via == viaLocal, Expires: sess.expires.UnixMilli()})
	return nil
}

// signInBody is the body of POST /ui/v1/session.
type signInBody struct {
	Token string `json:"token"`
}

// signIn exchanges a token for a session cookie. The token comes in the
// body (never the URL) and is compared in constant time; a refusal does
// not repeat it. A client over its budget of failed authentications, or a
// principal over its budget of sign-ins, is answered 429 with Retry-After.
// A principal's sessions beyond MaxSessionsPerPrincipal end, oldest first.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	if err := noQuery(r); err != nil {
		return err
	}
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, api.Error{Code: "CrossOrigin", Message: "sign-in is taken only from the dashboard's own sign-in page"})
		return nil
	}
	if wait, blocked := s.limits.blocked(info(r).client, s.now()); blocked {
		tooMany(w, wait, "too many failed authentications from this address")
		return nil
	}
	b, err := readJSON[signInBody](s, w, r, "the sign-in body")
	if err != nil {
		return err
	}
	if s.tokenless() {
		return s.startSession(w, r, localPrincipal)
	}
	if strings.TrimSpace(b.Token) == "" {
		return badRequest("token", "token is required: paste a viewer or operator token")
	}
	if len(b.Token) > maxBearerBytes {
		return badRequest("token", "token is over the limit of %d bytes", maxBearerBytes)
	}
	p, expired, ok := s.keys.Load().match(b.Token, s.now())
	if !ok && !expired && s.oidc != nil && looksLikeJWT(strings.TrimSpace(b.Token)) {
		var err error
		if p, err = s.oidc.verifyBearer(r.Context(), strings.TrimSpace(b.Token)); err == nil {
			ok = true // the session ends with the JWT (see sessions.create)
		} else if ae, isAPI := err.(*apiError); isAPI && ae.status != http.StatusUnauthorized {
			return err
		}
	}
	if !ok {
		reason, msg := "sign-in with an unknown token", "this token is not one the server knows; check it and try again"
		if expired {
			reason, msg = "sign-in with an expired token", "this token has expired; ask for a new one"
		}
		s.authFailed(r, bearerKind(strings.TrimSpace(b.Token)), reason)
		writeJSON(w, http.StatusUnauthorized, api.Error{Code: "Unauthorized", Message: msg, Details: map[string]any{"field": "token"}})
		return nil
	}
	if wait, ok := s.limits.signIn(p.key(), s.now()); !ok {
		s.log.Warn("sign-in: too many for one principal; refused for a while", "name", p.name, "client", info(r).clientString())
		tooMany(w, wait, "too many sign-ins for "+p.name)
		return nil
	}
	if err := s.startSession(w, r, p); err != nil {
		return err
	}
	s.audit(r, api.AuditEntry{Kind: api.AuditSignIn, Actor: p.name, Role: string(p.role), Credential: p.credential(false), Reason: p.via})
	return nil
}

// signOut ends the browser's session, and with it the session's requests
// in flight (its live streams) on every server. It is CSRF-checked like
// every state-changing request of a session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	if err := noQuery(r); err != nil {
		return err
	}
	id, sess, _, ok := s.sessionOf(r)
	if ok {
		if !sameOrigin(r) || r.Header.Get("Origin") == "" || !checkCSRF(id, r.Header.Get(CSRFHeader)) {
			writeJSON(w, http.StatusForbidden, api.Error{Code: "CSRF", Message: "the request has no valid " + CSRFHeader + " header for this session; reload the dashboard and try again"})
			return nil
		}
		s.sessions.drop(r.Context(), sessionKey(id))
		s.audit(r, api.AuditEntry{Kind: api.AuditSignOut, Actor: sess.name, Role: string(sess.role), Credential: sess.credential(true)})
	}
	http.SetCookie(w, sessionCookie(r, "", -1))
	w.WriteHeader(http.StatusNoContent)
	return nil
}
