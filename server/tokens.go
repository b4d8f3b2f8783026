package server

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
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

// HashPrefix starts the stored form of a hashed token secret:
// "sha256:" and the 64 hex digits of the secret's SHA-256.
const HashPrefix = "sha256:"

// Token is a bearer token: who holds it and what it may do.
type Token struct {
	// Name is the actor recorded on every command sent with the token.
	Name string
	// Role is viewer or operator.
	Role Role
	// Secret is the bearer value of a plaintext entry; empty for an entry
	// that stores only the hash.
	Secret string
	// Hash is the SHA-256 of the secret (ParseTokens sets it for both
	// kinds of entry; a Token built by hand may leave it zero and give
	// the Secret).
	Hash [sha256.Size]byte
	// Expires, if not zero, is when the token stops working.
	Expires time.Time
}

// Hashed reports whether the token's entry stored only the secret's hash.
func (t Token) Hashed() bool { return t.Secret == "" }

// hash is the token's secret hash, computed from Secret if not given.
func (t Token) hash() [sha256.Size]byte {
	if t.Secret != "" {
		return sha256.Sum256([]byte(t.Secret))
	}
	return t.Hash
}

// NewSecret returns a new random token secret: "amends_" and 43
// base64url characters (32 bytes from crypto/rand). The prefix lets secret
// scanners find a leaked one.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "amends_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashSecret returns the stored form of a secret: HashPrefix and its
// SHA-256 in hex. A token file line "name:role:" + HashSecret(secret)
// accepts the secret without holding it.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return HashPrefix + hex.EncodeToString(h[:])
}

// TokenLine returns the tokens-file line of a token whose secret is
// stored hashed, with its expiry if it has one.
func TokenLine(name string, role Role, secret string, expires time.Time) string {
	line := name + ":" + string(role) + ":" + HashSecret(secret)
	if !expires.IsZero() {
		line += " expires=" + expires.UTC().Format(time.RFC3339)
	}
	return line
}

// ParseTokens reads tokens as "name:role:secret", separated by commas or
// newlines; blank lines and lines starting with # are ignored. The secret
// is either the bearer value itself (plaintext; it works, but the file
// then holds it) or HashPrefix and the 64 hex digits of its SHA-256 (see
// HashSecret and `amends token new`). After the entry and a space,
// "expires=TIME" (RFC 3339, or a date YYYY-MM-DD meaning its start in UTC)
// ends the token at TIME. Names must be unique, and so must secrets (a
// secret held by two tokens would make one of them act as the other). The
// error names the entry and the rule it breaks (never the secret).
func ParseTokens(text string) ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	hashes := map[[sha256.Size]byte]string{} // hash -> name
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(text, ",", "\n")))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := parseTokenEntry(n, line)
		if err != nil {
			return nil, err
		}
		switch {
		case seen[t.Name]:
			return nil, fmt.Errorf("token name %q appears twice; names are the actors of the audit trail and must be unique", t.Name)
		case hashes[t.Hash] != "":
			return nil, fmt.Errorf("tokens %q and %q have the same secret; give every token its own secret (amends token new)", hashes[t.Hash], t.Name)
		}
		seen[t.Name] = true
		hashes[t.Hash] = t.Name
		out = append(out, t)
	}
	return out, sc.Err()
}

// splitAttributes splits a line into its entry and the attributes at its
// end: the last space-separated fields of the form word=value.
func splitAttributes(line string) (string, []string) {
	fields := strings.Fields(line)
	i := len(fields)
	for i > 1 && isAttribute(fields[i-1]) {
		i--
	}
	return strings.Join(fields[:i], " "), fields[i:]
}

// isAttribute reports whether a field is word=value, word in [a-z_].
func isAttribute(f string) bool {
	k, _, ok := strings.Cut(f, "=")
	if !ok || k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if (k[i] < 'a' || k[i] > 'z') && k[i] != '_' {
			return false
		}
	}
	return true
}

// parseExpiry reads expires=...: RFC 3339 or a date (its start, UTC).
func parseExpiry(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("expires=%s is not a time: give RFC 3339 (2027-01-31T00:00:00Z) or a date (2027-01-31)", cutText(v, 40))
}

// cutText shortens s to n bytes for a message.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
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

// keyring holds the tokens a server accepts. It is never changed once
// built; SetTokens swaps it.
type keyring struct {
	hashes [][sha256.Size]byte
	tokens []Token
	byName map[string]int
}

func newKeyring(tokens []Token) *keyring {
	k := &keyring{tokens: tokens, byName: map[string]int{}}
	for i, t := range tokens {
		k.hashes = append(k.hashes, t.hash())
		k.byName[t.Name] = i
	}
	return k
}

// match finds the token whose secret is secret, comparing its hash with
// every token's in constant time, whichever matches. expired is set for a
// token that matched but has expired at now.
func (k *keyring) match(secret string, now time.Time) (p principal, expired, ok bool) {
	h := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	found := -1
	for i := range k.hashes {
		if subtle.ConstantTimeCompare(h[:], k.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return principal{}, false, false
	}
	t := k.tokens[found]
	if !t.Expires.IsZero() && !now.Before(t.Expires) {
		return principal{}, true, false
	}
	return principal{name: t.Name, role: t.Role, via: viaToken, expires: t.Expires}, false, true
}

// holds reports whether the keyring still has the token of a session made
// with one: same name and role, not expired at now.
func (k *keyring) holds(p principal, now time.Time) bool {
	i, ok := k.byName[p.name]
	if !ok {
		return false
	}
	t := k.tokens[i]
	return t.Role == p.role && (t.Expires.IsZero() || now.Before(t.Expires))
}

// changed lists the names of old's tokens that next revokes: gone, or
// with another secret, role or expiry.
func changed(old, next *keyring) []string {
	var out []string
	for i, t := range old.tokens {
		j, ok := next.byName[t.Name]
		if !ok || next.hashes[j] != old.hashes[i] || next.tokens[j].Role != t.Role || !next.tokens[j].Expires.Equal(t.Expires) {
			out = append(out, t.Name)
		}
	}
	return out
}

// parseTokenEntry reads entry n of a tokens text, name:role:secret (or a
// hashed secret) with its attributes, and checks it alone.
func parseTokenEntry(n int, line string) (Token, error) {
	var err error
	entry, attrs := splitAttributes(line)
	parts := strings.SplitN(entry, ":", 3)
	if len(parts) != 3 {
		return Token{}, fmt.Errorf("token entry %d is not name:role:secret", n)
	}
	t := Token{Name: strings.TrimSpace(parts[0]), Role: Role(strings.TrimSpace(parts[1]))}
	secret := strings.TrimSpace(parts[2])
	if h, ok := strings.CutPrefix(secret, HashPrefix); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			return Token{}, fmt.Errorf("token %q has a hashed secret that is not %s and 64 hex digits; make the line with `amends token new` or `amends token hash`", t.Name, HashPrefix)
		}
		copy(t.Hash[:], b)
	} else {
		t.Secret = secret
		t.Hash = sha256.Sum256([]byte(secret))
	}
	if t.Expires, err = tokenExpiry(t.Name, attrs); err != nil {
		return Token{}, err
	}
	switch {
	case t.Name == "":
		return Token{}, fmt.Errorf("token entry %d has an empty name", n)
	case checkText("name", t.Name, MaxParamBytes) != nil || strings.ContainsFunc(t.Name, refusedInText):
		return Token{}, fmt.Errorf("token entry %d has a name that is not up to %d bytes of printable text", n, MaxParamBytes)
	case t.Role != RoleViewer && t.Role != RoleOperator:
		return Token{}, fmt.Errorf("token %q has role %q; the roles are viewer and operator", t.Name, cutText(string(t.Role), 40))
	case !t.Hashed() && len(t.Secret) < MinSecretLength:
		return Token{}, fmt.Errorf("token %q has a secret of %d characters; use at least %d (amends token new makes one)", t.Name, len(t.Secret), MinSecretLength)
	}
	return t, nil
}

// tokenExpiry reads token name's attributes: expires=TIME is the only one.
func tokenExpiry(name string, attrs []string) (expires time.Time, err error) {
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		if k != "expires" {
			return time.Time{}, fmt.Errorf("token %q has the unknown attribute %q; the only one is expires=2027-01-31T00:00:00Z (secrets have no spaces)", name, cutText(k, 40))
		}
		exp, err := parseExpiry(v)
		if err != nil {
			return time.Time{}, fmt.Errorf("token %q: %v", name, err)
		}
		expires = exp
	}
	return expires, nil
}
