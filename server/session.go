package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/amends-dev/amends/api"
)

// Dashboard sessions: a browser signs in once with a token (or through
// the OIDC issuer) and then holds an opaque session cookie instead.
const (
	// SessionCookie is the name of the dashboard's session cookie. It holds
	// a random session id, never a token.
	SessionCookie = "amends_session"
	// CSRFHeader carries a session's CSRF token on every state-changing
	// request a signed-in browser sends.
	CSRFHeader = "X-CSRF-Token"
	// SessionTTL is how long a session lasts after sign-in (less if its
	// token expires sooner).
	SessionTTL = 12 * time.Hour
	// MaxSessionsPerPrincipal bounds the sessions of one principal (a
	// token, an OIDC subject): signing in beyond it ends that principal's
	// oldest session, never another principal's.
	MaxSessionsPerPrincipal = 20
	// MaxSessions bounds the sessions of a deployment; a sign-in beyond it
	// is refused (503 SessionsFull) until sessions end or expire.
	MaxSessions = 50000
)

// errSessionsFull: MaxSessions are live.
var errSessionsFull = &apiError{status: http.StatusServiceUnavailable, body: api.Error{Code: "SessionsFull",
	Message: "the server holds as many dashboard sessions as it keeps; try again later, or use a bearer token"}}

// session is one signed-in browser.
type session struct {
	principal
	created time.Time
	expires time.Time
}

// sessionIDLength is the length of a session id: 32 random bytes,
// base64url.
const sessionIDLength = 43

// sessionKey is the key of session id: the SHA-256 of the id, so that
// neither the store nor a lookup's timing holds anything a browser could
// present.
func sessionKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return "s_" + hex.EncodeToString(h[:])
}

// csrfOf is the CSRF token of session id: an HMAC of the id, so that no
// store holds it, and only the holder of the (HttpOnly) cookie can have it.
func csrfOf(id string) string {
	m := hmac.New(sha256.New, []byte(id))
	m.Write([]byte("amends csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether header value got is session id's CSRF token,
// in constant time.
func checkCSRF(id, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(csrfOf(id))) == 1
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validSessionID reports whether id has the shape of a session id, so that
// a garbage cookie costs no lookup in the store.
func validSessionID(id string) bool {
	if len(id) != sessionIDLength {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(id)
	return err == nil
}

// sessions keeps the signed-in browsers: in memory, and with a store in a
// KV bucket that every server of a deployment shares (see sessionStore),
// so that a session survives a restart and works on every instance. Safe
// for concurrent use.
type sessions struct {
	mu          sync.Mutex
	byKey       map[string]*session
	byPrincipal map[string]map[string]struct{}
	now         func() time.Time
	store       *sessionStore // nil: memory only
	// ended is called, outside the lock, when a session ends.
	ended func(key string)
}

func newSessions(now func() time.Time, store *sessionStore, ended func(string)) *sessions {
	return &sessions{byKey: map[string]*session{}, byPrincipal: map[string]map[string]struct{}{}, now: now, store: store, ended: ended}
}

// create starts a session for p and returns its id and the session. It ends p's oldest
// sessions beyond MaxSessionsPerPrincipal; at MaxSessions it returns
// errSessionsFull; with a store, the store's error.
func (ss *sessions) create(ctx context.Context, p principal) (string, session, error) {
	id := randomToken()
	key := sessionKey(id)
	now := ss.now()
	s := &session{principal: p, created: now, expires: now.Add(SessionTTL)}
	if !p.expires.IsZero() && p.expires.Before(s.expires) {
		s.expires = p.expires
	}
	ss.mu.Lock()
	if len(ss.byKey) >= MaxSessions {
		ss.sweepLocked(now)
	}
	if len(ss.byKey) >= MaxSessions {
		ss.mu.Unlock()
		return "", session{}, errSessionsFull
	}
	var victims []string
	if mine := ss.byPrincipal[p.key()]; len(mine) >= MaxSessionsPerPrincipal {
		keys := make([]string, 0, len(mine))
		for k := range mine {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return ss.byKey[a].created.Compare(ss.byKey[b].created) })
		victims = keys[:len(keys)-MaxSessionsPerPrincipal+1]
		for _, v := range victims {
			ss.removeLocked(v)
		}
	}
	ss.addLocked(key, s)
	ss.mu.Unlock()
	for _, v := range victims {
		ss.ended(v)
		if ss.store != nil {
			ss.store.delete(ctx, v)
		}
	}
	if ss.store != nil {
		if err := ss.store.put(ctx, key, s); err != nil {
			ss.mu.Lock()
			ss.removeLocked(key)
			ss.mu.Unlock()
			return "", session{}, err
		}
	}
	return id, *s, nil
}

func (ss *sessions) addLocked(key string, s *session) {
	if old, ok := ss.byKey[key]; ok {
		delete(ss.byPrincipal[old.key()], key)
	}
	ss.byKey[key] = s
	m := ss.byPrincipal[s.key()]
	if m == nil {
		m = map[string]struct{}{}
		ss.byPrincipal[s.key()] = m
	}
	m[key] = struct{}{}
}

func (ss *sessions) removeLocked(key string) bool {
	s, ok := ss.byKey[key]
	if !ok {
		return false
	}
	delete(ss.byKey, key)
	if m := ss.byPrincipal[s.key()]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(ss.byPrincipal, s.key())
		}
	}
	return true
}

// sweepLocked drops the expired sessions from memory (the store's TTL
// drops them from the bucket).
func (ss *sessions) sweepLocked(now time.Time) {
	for k, s := range ss.byKey {
		if !now.Before(s.expires) {
			ss.removeLocked(k)
		}
	}
}

// sweep drops the expired sessions from memory.
func (ss *sessions) sweep() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.sweepLocked(ss.now())
}

// lookup returns the live session of id. A session another server made
// and this one has not seen yet is read from the store.
func (ss *sessions) lookup(ctx context.Context, id string) (session, bool) {
	if !validSessionID(id) {
		return session{}, false
	}
	key := sessionKey(id)
	now := ss.now()
	ss.mu.Lock()
	s, ok := ss.byKey[key]
	if ok && !now.Before(s.expires) {
		ss.removeLocked(key)
		ok = false
	}
	ss.mu.Unlock()
	if ok {
		return *s, true
	}
	if ss.store == nil {
		return session{}, false
	}
	s, err := ss.store.get(ctx, key)
	if err != nil || !now.Before(s.expires) {
		return session{}, false
	}
	ss.mu.Lock()
	ss.addLocked(key, s)
	ss.mu.Unlock()
	return *s, true
}

// drop ends the session of key.
func (ss *sessions) drop(ctx context.Context, key string) {
	ss.mu.Lock()
	ss.removeLocked(key)
	ss.mu.Unlock()
	ss.ended(key)
	if ss.store != nil {
		ss.store.delete(ctx, key)
	}
}

// dropPrincipal ends every session of the principal of key pkey.
func (ss *sessions) dropPrincipal(ctx context.Context, pkey string) {
	ss.mu.Lock()
	var keys []string
	for k := range ss.byPrincipal[pkey] {
		keys = append(keys, k)
	}
	ss.mu.Unlock()
	for _, k := range keys {
		ss.drop(ctx, k)
	}
}

// apply takes a change of the store another server (or this one) made:
// s is the session of key, or nil when it ended.
func (ss *sessions) apply(key string, s *session) {
	ss.mu.Lock()
	if s != nil {
		ss.addLocked(key, s)
		ss.mu.Unlock()
		return
	}
	ss.removeLocked(key)
	ss.mu.Unlock()
	// Its requests end even if this server did not hold the session (it
	// may have read it from the store before its watch caught up).
	ss.ended(key)
}

// count is how many sessions are held, and principal's (tests).
func (ss *sessions) count(pkey string) (all, principal int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byKey), len(ss.byPrincipal[pkey])
}

// sessionOf returns the session of r's cookie, if it has a live one whose
// credential the server still accepts. present reports whether r carried
// a session cookie at all. A session whose token was revoked, or made
// while the server had no tokens, ends here.
func (s *Server) sessionOf(r *http.Request) (id string, sess session, present, ok bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", session{}, false, false
	}
	sess, ok = s.sessions.lookup(r.Context(), c.Value)
	if !ok {
		return c.Value, session{}, true, false
	}
	if !s.credentialLive(sess.principal) {
		s.sessions.drop(r.Context(), sessionKey(c.Value))
		return c.Value, session{}, true, false
	}
	return c.Value, sess, true, true
}

// credentialLive reports whether the credential of a session's principal
// still works: its token is held with the same role and has not expired;
// a local session needs a server without tokens; an OIDC one a server
// with OIDC.
func (s *Server) credentialLive(p principal) bool {
	switch p.via {
	case viaToken:
		return s.keys.Load().holds(p, s.now())
	case viaLocal:
		return s.tokenless()
	case viaOIDC:
		return s.oidc != nil
	}
	return false
}

// sessionCookie is the cookie that carries id: HttpOnly, SameSite=Strict,
// scoped to the whole site, Secure when the client came over TLS (directly
// or through a trusted proxy). maxAge < 0 deletes it.
func sessionCookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: info(r).secure,
	}
}
