package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Dashboard sessions: a browser signs in once with a token and then holds
// an opaque session cookie instead of the token.
const (
	// SessionCookie is the name of the dashboard's session cookie. It holds
	// a random session id, never a token.
	SessionCookie = "amends_session"
	// CSRFHeader carries a session's CSRF token on every state-changing
	// request a signed-in browser sends.
	CSRFHeader = "X-CSRF-Token"
	// SessionTTL is how long a session lasts after sign-in.
	SessionTTL = 12 * time.Hour
	// MaxSessions bounds the sessions a server keeps; signing in beyond it
	// drops the oldest.
	MaxSessions = 10000
)

// session is one signed-in browser.
type session struct {
	principal
	csrf    string
	expires time.Time
	created time.Time
}

// sessions keeps the signed-in browsers of one server process, keyed by
// the SHA-256 of the session id, so that looking one up leaks nothing
// useful through timing. Safe for concurrent use.
type sessions struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]*session
	now  func() time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{byID: map[[sha256.Size]byte]*session{}, now: now}
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for p and returns its id and CSRF token.
func (ss *sessions) create(p principal) (id string, csrf string) {
	id, csrf = randomToken(), randomToken()
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byID) >= MaxSessions {
		ss.evict(now)
	}
	ss.byID[sha256.Sum256([]byte(id))] = &session{principal: p, csrf: csrf, expires: now.Add(SessionTTL), created: now}
	return id, csrf
}

// evict drops expired sessions and, if still full, the oldest one. The
// caller holds the lock.
func (ss *sessions) evict(now time.Time) {
	var oldest [sha256.Size]byte
	var oldestAt time.Time
	for k, s := range ss.byID {
		if !now.Before(s.expires) {
			delete(ss.byID, k)
			continue
		}
		if oldestAt.IsZero() || s.created.Before(oldestAt) {
			oldest, oldestAt = k, s.created
		}
	}
	if len(ss.byID) >= MaxSessions {
		delete(ss.byID, oldest)
	}
}

// lookup returns the live session of id.
func (ss *sessions) lookup(id string) (session, bool) {
	if id == "" || len(id) > 128 {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[k]
	if !ok {
		return session{}, false
	}
	if !ss.now().Before(s.expires) {
		delete(ss.byID, k)
		return session{}, false
	}
	return *s, true
}

// drop ends the session of id.
func (ss *sessions) drop(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, sha256.Sum256([]byte(id)))
}

// fromCookie returns the session of r's session cookie.
func (ss *sessions) fromCookie(r *http.Request) (string, session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", session{}, false
	}
	s, ok := ss.lookup(c.Value)
	return c.Value, s, ok
}

// checkCSRF reports whether header value got matches the session's CSRF
// token, in constant time.
func (s session) checkCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// sessionCookie is the cookie that carries id: HttpOnly, SameSite=Strict,
// scoped to the whole site, Secure when the client came over TLS (directly
// or through a trusted proxy). maxAge
// < 0 deletes it.
func sessionCookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: info(r).secure,
	}
}
