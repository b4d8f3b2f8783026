// Package testissuer is an OpenID Connect issuer for tests, served by
// httptest on loopback: discovery, a JWKS of ES256 keys that Rotate
// replaces, an authorization endpoint that signs in the configured user at
// once (no page), and a token endpoint that checks the client, the code,
// the redirect URI and PKCE (S256) before it answers an ID token with the
// sign-in's nonce. Nothing leaves the machine.
package testissuer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc/oidctest"
)

// Issuer is a running test issuer. Its methods are safe for concurrent
// use.
type Issuer struct {
	// URL is the issuer's URL (its "iss").
	URL string
	// ClientID and ClientSecret are the one client it knows.
	ClientID, ClientSecret string
	// Server is the httptest server (its Client trusts it under TLS).
	Server *httptest.Server

	mu   sync.Mutex
	disc oidctest.Server
	// prev is disc before the last Rotate; the next stale JWKS fetches
	// are answered with its keys (StaleKeys).
	prev        oidctest.Server
	stale       int
	discoveries int
	keys        []key // the current key last
	user        map[string]any
	codes       map[string]grant
	// Logins counts the completed code exchanges.
	logins int
}

type key struct {
	id   string
	priv *ecdsa.PrivateKey
}

type grant struct {
	redirect, nonce, challenge string
	claims                     map[string]any
}

// Start starts an issuer until the test ends; with tlsCfg it serves HTTPS
// with that configuration (its certificates), else plain HTTP.
func Start(tb testing.TB, tlsCfg *tls.Config) *Issuer {
	tb.Helper()
	i := &Issuer{ClientID: "amends-dashboard", ClientSecret: "test-client-secret-0123456789", codes: map[string]grant{},
		user: map[string]any{"sub": "u-1", "email": "ada@example.com", "roles": []string{"amends-operator"}}}
	i.disc.Algorithms = []string{"ES256"}
	i.Server = httptest.NewUnstartedServer(i)
	if tlsCfg != nil {
		i.Server.TLS = tlsCfg
		i.Server.StartTLS()
	} else {
		i.Server.Start()
	}
	tb.Cleanup(i.Server.Close)
	i.URL = i.Server.URL
	i.disc.SetIssuer(i.URL)
	i.Rotate(true)
	return i
}

// Rotate makes a new signing key current. With drop, the JWKS serves only
// the new key; else the old one stays listed too.
func (i *Issuer) Rotate(drop bool) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.prev = i.disc
	k := key{id: fmt.Sprintf("k%d", len(i.keys)+1) + randomString(4), priv: priv}
	if drop {
		i.keys = nil
	}
	i.keys = append(i.keys, k)
	i.disc.PublicKeys = nil
	for _, k := range i.keys {
		i.disc.PublicKeys = append(i.disc.PublicKeys, oidctest.PublicKey{PublicKey: k.priv.Public(), KeyID: k.id, Algorithm: "ES256"})
	}
}

// SignInAs sets the claims of the user the next sign-ins sign in (sub,
// email, roles, ...).
func (i *Issuer) SignInAs(claims map[string]any) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.user = claims
}

// Logins counts the completed code exchanges.
func (i *Issuer) Logins() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.logins
}

// Token signs a JWT with the current key: iss, aud, iat and exp (now +
// ttl) and the given claims.
func (i *Issuer) Token(aud string, claims map[string]any, ttl time.Duration) string {
	i.mu.Lock()
	k := i.keys[len(i.keys)-1]
	i.mu.Unlock()
	return i.sign(k, aud, claims, ttl)
}

func (i *Issuer) sign(k key, aud string, claims map[string]any, ttl time.Duration) string {
	c := map[string]any{}
	for n, v := range claims {
		c[n] = v
	}
	now := time.Now()
	c["iss"], c["aud"], c["iat"], c["exp"] = i.URL, aud, now.Unix(), now.Add(ttl).Unix()
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return oidctest.SignIDToken(k.priv, k.id, "ES256", string(data))
}

// ServeHTTP serves discovery, the JWKS, /auth and /token.
func (i *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/auth":
		i.authorize(w, r)
	case "/token":
		i.token(w, r)
	default:
		i.mu.Lock()
		disc := i.disc
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			i.discoveries++
		case "/keys":
			if i.stale > 0 {
				i.stale--
				disc = i.prev
			}
		}
		i.mu.Unlock()
		disc.ServeHTTP(w, r)
	}
}

// StaleKeys makes the next n fetches of the JWKS answer the keys as they
// were before the last Rotate: what a client sees whose fetch ended just
// before the rotation.
func (i *Issuer) StaleKeys(n int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stale = n
}

// Discoveries counts the requests of the discovery document.
func (i *Issuer) Discoveries() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.discoveries
}

func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case q.Get("client_id") != i.ClientID:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE S256 is required", http.StatusBadRequest)
		return
	case q.Get("state") == "" || q.Get("nonce") == "":
		http.Error(w, "state and nonce are required", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	code := randomString(16)
	i.mu.Lock()
	i.codes[code] = grant{redirect: q.Get("redirect_uri"), nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), claims: i.user}
	i.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "POST a form", http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok { // RFC 6749 §2.3.1: form-encoded inside Basic
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != i.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(i.ClientSecret)) != 1 {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	i.mu.Lock()
	g, ok := i.codes[r.PostForm.Get("code")]
	delete(i.codes, r.PostForm.Get("code")) // a code is used once
	k := i.keys[len(i.keys)-1]
	i.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !ok, r.PostForm.Get("grant_type") != "authorization_code":
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	case r.PostForm.Get("redirect_uri") != g.redirect:
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	claims := map[string]any{"nonce": g.nonce}
	for n, v := range g.claims {
		claims[n] = v
	}
	idToken := i.sign(k, i.ClientID, claims, time.Hour)
	i.mu.Lock()
	i.logins++
	i.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": randomString(16), "token_type": "Bearer", "expires_in": 3600, "id_token": idToken})
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":` + strconv.Quote(code) + `}`))
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
