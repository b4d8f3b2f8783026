package server

import (
	"net/http"
	"strings"
)

// Dashboard is the browser UI a Server mounts next to the API (package
// dashboard implements it). The server authenticates and authorizes; the
// dashboard only serves.
type Dashboard interface {
	// ServePage serves the pages and their assets (GET /, /search,
	// /record, /signin, /assets/...). They hold no data, so they need no
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
		{method: "GET", pattern: "/signin", handler: page},
		{method: "GET", pattern: "/assets/{file...}", handler: page},
		{method: "GET", pattern: "/ui/v1/session", handler: s.whoami},
		{method: "POST", pattern: "/ui/v1/session", handler: s.signIn},
		{method: "DELETE", pattern: "/ui/v1/session", handler: s.signOut},
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
}

// noStore marks a response as private to this browser.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// whoami answers the browser's session. Without tokens it starts a local
// session, so the dashboard works on loopback without sign-in as the API
// does.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	if _, sess, ok := s.sessions.fromCookie(r); ok {
		writeJSON(w, http.StatusOK, SessionInfo{Name: sess.name, Role: sess.role, CSRF: sess.csrf, Local: len(s.keys.tokens) == 0})
		return nil
	}
	if len(s.keys.tokens) == 0 {
		s.startSession(w, r, principal{name: LocalActor, role: RoleOperator}, true)
		return nil
	}
	writeJSON(w, http.StatusUnauthorized, Error{Code: "Unauthorized", Message: "not signed in; sign in with a viewer or operator token at /signin"})
	return nil
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, p principal, local bool) {
	id, csrf := s.sessions.create(p)
	http.SetCookie(w, sessionCookie(r, id, int(SessionTTL.Seconds())))
	writeJSON(w, http.StatusOK, SessionInfo{Name: p.name, Role: p.role, CSRF: csrf, Local: local})
}

// signInBody is the body of POST /ui/v1/session.
type signInBody struct {
	Token string `json:"token"`
}

// signIn exchanges a token for a session cookie. The token comes in the
// body (never the URL) and is compared in constant time; a refusal does
// not repeat it.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, Error{Code: "CrossOrigin", Message: "sign-in is taken only from the dashboard's own sign-in page"})
		return nil
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var b signInBody
	if err := decodeStrict(body, &b, "the sign-in body"); err != nil {
		return err
	}
	if len(s.keys.tokens) == 0 {
		s.startSession(w, r, principal{name: LocalActor, role: RoleOperator}, true)
		return nil
	}
	if strings.TrimSpace(b.Token) == "" {
		return badRequest("token", "token is required: paste a viewer or operator token")
	}
	if len(b.Token) > 1024 {
		return badRequest("token", "token is over the limit of 1024 characters")
	}
	p, ok := s.keys.match(b.Token)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, Error{Code: "Unauthorized", Message: "this token is not one the server knows; check it and try again", Details: map[string]any{"field": "token"}})
		return nil
	}
	s.startSession(w, r, p, false)
	return nil
}

// signOut ends the browser's session. It is CSRF-checked like every
// state-changing request of a session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	id, sess, ok := s.sessions.fromCookie(r)
	if ok {
		if !sameOrigin(r) || r.Header.Get("Origin") == "" || !sess.checkCSRF(r.Header.Get(CSRFHeader)) {
			writeJSON(w, http.StatusForbidden, Error{Code: "CSRF", Message: "the request has no valid " + CSRFHeader + " header for this session; reload the dashboard and try again"})
			return nil
		}
		s.sessions.drop(id)
	}
	http.SetCookie(w, sessionCookie(r, "", -1))
	w.WriteHeader(http.StatusNoContent)
	return nil
}
