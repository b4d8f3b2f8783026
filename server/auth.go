package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Role is what a token may do.
type Role string

// The roles.
const (
	// RoleViewer reads records, views, summaries, history and metrics.
	RoleViewer Role = "viewer"
	// RoleOperator also sends commands.
	RoleOperator Role = "operator"
)

// MinSecretLength is the shortest token secret accepted.
const MinSecretLength = 16

// Token is a bearer token: who holds it and what it may do.
type Token struct {
	// Name is the actor recorded on every command sent with the token.
	Name string
	// Role is viewer or operator.
	Role Role
	// Secret is the bearer value, at least MinSecretLength characters.
	Secret string
}

// ParseTokens reads tokens as "name:role:secret", separated by commas or
// newlines; blank lines and lines starting with # are ignored. Names must
// be unique, and so must secrets (a secret held by two tokens would make
// one of them act as the other). The error names the entry and the rule it
// breaks (never the secret).
func ParseTokens(text string) ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	secrets := map[string]string{} // secret -> name
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(text, ",", "\n")))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("token entry %d is not name:role:secret", n)
		}
		t := Token{Name: strings.TrimSpace(parts[0]), Role: Role(strings.TrimSpace(parts[1])), Secret: strings.TrimSpace(parts[2])}
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("token entry %d has an empty name", n)
		case t.Role != RoleViewer && t.Role != RoleOperator:
			return nil, fmt.Errorf("token %q has role %q; the roles are viewer and operator", t.Name, t.Role)
		case len(t.Secret) < MinSecretLength:
			return nil, fmt.Errorf("token %q has a secret of %d characters; use at least %d (e.g. openssl rand -hex 24)", t.Name, len(t.Secret), MinSecretLength)
		case seen[t.Name]:
			return nil, fmt.Errorf("token name %q appears twice; names are the actors of the audit trail and must be unique", t.Name)
		case secrets[t.Secret] != "":
			return nil, fmt.Errorf("tokens %q and %q have the same secret; give every token its own secret (e.g. openssl rand -hex 24)", secrets[t.Secret], t.Name)
		}
		seen[t.Name] = true
		secrets[t.Secret] = t.Name
		out = append(out, t)
	}
	return out, sc.Err()
}

// LoadTokens reads a tokens file (see ParseTokens).
func LoadTokens(path string) ([]Token, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	tokens, err := ParseTokens(string(data))
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return tokens, nil
}

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

// principal is who sent a request.
type principal struct {
	name string
	role Role
}

// LocalActor is the actor of requests to a server without tokens.
const LocalActor = "local"

type keyring struct {
	hashes [][sha256.Size]byte
	tokens []Token
}

func newKeyring(tokens []Token) *keyring {
	k := &keyring{tokens: tokens}
	for _, t := range tokens {
		k.hashes = append(k.hashes, sha256.Sum256([]byte(t.Secret)))
	}
	return k
}

// authenticate finds the request's principal. It compares the presented
// secret's hash with every token's in constant time, whichever matches.
func (k *keyring) authenticate(r *http.Request) (principal, bool) {
	if len(k.tokens) == 0 {
		return principal{name: LocalActor, role: RoleOperator}, true
	}
	// The scheme is case-insensitive (RFC 7235 §2.1).
	scheme, secret, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return principal{}, false
	}
	return k.match(secret)
}

// match finds the token whose secret is secret, comparing hashes in
// constant time with every token's, whichever matches.
func (k *keyring) match(secret string) (principal, bool) {
	h := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	found := -1
	for i := range k.hashes {
		if subtle.ConstantTimeCompare(h[:], k.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return principal{}, false
	}
	return principal{name: k.tokens[found].Name, role: k.tokens[found].Role}, true
}

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
//   - a state-changing request from another origin is refused (403
//     CrossOrigin), however it authenticates;
//   - a request without an Authorization header that carries a live
//     session cookie acts as the session's principal; if it changes
//     state it must come from the dashboard's origin and carry the
//     session's CSRF token in X-CSRF-Token (403 CSRF otherwise);
//   - without tokens configured, a state-changing request from a browser
//     needs such a session too (the dashboard makes one on loopback), so
//     that no other page the browser shows can steer records;
//   - otherwise the bearer token decides, as before (401, 403).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, need Role) (principal, bool) {
	unsafe := !safeMethod(r.Method)
	if unsafe && !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, Error{Code: "CrossOrigin",
			Message: "this request came from another site (its Origin is not this server's); state-changing requests are taken only from the dashboard's own pages"})
		return principal{}, false
	}
	if r.Header.Get("Authorization") == "" {
		if _, sess, ok := s.sessions.fromCookie(r); ok {
			if unsafe && (r.Header.Get("Origin") == "" || !sess.checkCSRF(r.Header.Get(CSRFHeader))) {
				writeJSON(w, http.StatusForbidden, Error{Code: "CSRF",
					Message: "the request has no valid " + CSRFHeader + " header for this session; reload the dashboard and try again"})
				return principal{}, false
			}
			return s.allow(w, sess.principal, need)
		}
		if unsafe && len(s.keys.tokens) == 0 && fromBrowser(r) {
			writeJSON(w, http.StatusForbidden, Error{Code: "CSRF",
				Message: "a browser's state-changing request needs a dashboard session and its " + CSRFHeader + " header; reload the dashboard and try again"})
			return principal{}, false
		}
	}
	p, ok := s.keys.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="amends"`)
		writeJSON(w, http.StatusUnauthorized, Error{Code: "Unauthorized", Message: "missing or unknown bearer token; send Authorization: Bearer <token> (AMENDS_TOKEN for the CLI) or sign in to the dashboard"})
		return principal{}, false
	}
	return s.allow(w, p, need)
}

// allow checks that p may act as role need.
func (s *Server) allow(w http.ResponseWriter, p principal, need Role) (principal, bool) {
	if !p.allows(need) {
		writeJSON(w, http.StatusForbidden, Error{Code: "Forbidden", Message: "token " + p.name + " has role " + string(p.role) + "; this request needs the " + string(need) + " role"})
		return principal{}, false
	}
	return p, true
}
