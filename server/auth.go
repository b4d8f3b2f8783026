package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
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
