package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/time/rate"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
)

// OIDCConfig lets a server accept an OpenID Connect issuer's identities:
// its JWTs as bearer tokens (checked against the issuer's JWKS, which is
// fetched again when a token names a key it does not hold, so the issuer
// may rotate keys), and, with a ClientID, sign-in to the dashboard through
// the issuer (the authorization code flow with PKCE, state and nonce). A
// claim maps each identity to the viewer or operator role.
type OIDCConfig struct {
	// Issuer is the issuer's URL; its discovery document
	// (/.well-known/openid-configuration) names the JWKS and endpoints.
	Issuer string
	// Audience is the "aud" a bearer JWT must carry (the API's identifier
	// at the issuer; often the client id).
	Audience string
	// ClientID and ClientSecret are the dashboard's client at the issuer.
	// Without ClientID the dashboard signs in with tokens only.
	ClientID, ClientSecret string
	// RoleClaim names the claim that holds the roles: a string (of
	// space-separated values) or an array of strings; a dotted path
	// reaches into objects ("realm_access.roles"). Default "roles".
	RoleClaim string
	// OperatorRoles and ViewerRoles are the claim values that grant the
	// operator and viewer role (defaults "amends-operator" and
	// "amends-viewer"); operator wins when both are held. An identity with
	// neither is refused (403 NoRole).
	OperatorRoles, ViewerRoles []string
	// NameClaim chooses the actor's name, on the records' commands and in
	// the audit trail. By default ("" or "sub") it is the issuer-qualified
	// subject, "ISSUER#SUB": what the issuer vouches for and no one can
	// choose. "email" takes the e-mail address when the token's
	// email_verified is true (else the subject), as "oidc:ADDRESS". Any
	// other claim is taken as it is, "oidc:VALUE": only for a claim the
	// issuer's administrators set, never one its users can edit. Every
	// OIDC actor holds a ':', which a token's name cannot, so the two are
	// never confused.
	NameClaim string
	// HTTPClient reaches the issuer (default: a client with a 10 s
	// timeout and the system's roots).
	HTTPClient *http.Client
	// RedirectURL is the sign-in callback registered at the issuer; by
	// default this server's /ui/v1/oidc/callback at the scheme and host
	// the browser used (the host is checked against AllowedHosts).
	RedirectURL string
}

// OIDCCallbackPath is the path of the dashboard's sign-in callback.
const OIDCCallbackPath = "/ui/v1/oidc/callback"

// oidcAuth verifies an issuer's tokens. The issuer's discovery is done on
// first use and, after a failure, tried again at most every
// oidcRetryEvery; until it succeeds, JWTs are answered 503. Safe for
// concurrent use.
type oidcAuth struct {
	cfg OIDCConfig
	log *slog.Logger

	mu       sync.Mutex
	provider *oidc.Provider
	failed   time.Time
	lastErr  error
	verifiers
	// rediscover bounds the discoveries a signature failure starts (see
	// verify), so that forged tokens cannot make the server hammer the
	// issuer.
	rediscover *rate.Limiter
}

// The budget of the discoveries signature failures start: one every
// oidcRediscoverEvery, oidcRediscoverBurst at once.
const (
	oidcRediscoverEvery = 2 * time.Second
	oidcRediscoverBurst = 5
)

// oidcRetryEvery is how long a failed discovery of the issuer is reused.
const oidcRetryEvery = 5 * time.Second

func newOIDCAuth(cfg OIDCConfig, log *slog.Logger) *oidcAuth {
	if cfg.RoleClaim == "" {
		cfg.RoleClaim = "roles"
	}
	if len(cfg.OperatorRoles) == 0 {
		cfg.OperatorRoles = []string{"amends-operator"}
	}
	if len(cfg.ViewerRoles) == 0 {
		cfg.ViewerRoles = []string{"amends-viewer"}
	}
	if cfg.NameClaim == "" {
		cfg.NameClaim = "sub"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &oidcAuth{cfg: cfg, log: log, rediscover: rate.NewLimiter(rate.Every(oidcRediscoverEvery), oidcRediscoverBurst)}
}

// ctx carries the issuer's HTTP client for go-oidc.
func (o *oidcAuth) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.cfg.HTTPClient)
}

// ready returns the issuer's provider, discovering it first if needed.
func (o *oidcAuth) ready(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	if !o.failed.IsZero() && time.Since(o.failed) < oidcRetryEvery {
		return nil, o.lastErr
	}
	p, err := o.discover(ctx)
	if err != nil {
		o.failed, o.lastErr = time.Now(), err
		o.log.Warn("OIDC: the issuer's discovery failed; its tokens are refused with 503 until it succeeds", "issuer", o.cfg.Issuer, "err", err)
		return nil, err
	}
	o.use(p, o.verifiersOf(p))
	o.log.Info("OIDC: issuer discovered", "issuer", o.cfg.Issuer)
	return p, nil
}

// discover runs the issuer's discovery, within 10 s.
func (o *oidcAuth) discover(ctx context.Context) (*oidc.Provider, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return oidc.NewProvider(o.ctx(dctx), o.cfg.Issuer)
}

// verifiers are a provider's verifiers of bearer JWTs (audience
// cfg.Audience) and of the dashboard's ID tokens (cfg.ClientID).
type verifiers struct{ bearer, idTokens *oidc.IDTokenVerifier }

func bearerVerifier(v verifiers) *oidc.IDTokenVerifier  { return v.bearer }
func idTokenVerifier(v verifiers) *oidc.IDTokenVerifier { return v.idTokens }

// verifiersOf returns p's verifiers. Both share its key set, which
// fetches keys with the issuer's client long after the discovery, and take
// the issuer's signing algorithms from its discovery.
func (o *oidcAuth) verifiersOf(p *oidc.Provider) verifiers {
	return verifiers{bearer: p.Verifier(&oidc.Config{ClientID: o.cfg.Audience}), idTokens: p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID})}
}

// use makes p the provider, with its verifiers v. The caller holds o.mu.
func (o *oidcAuth) use(p *oidc.Provider, v verifiers) {
	o.provider, o.verifiers = p, v
}

// verify checks raw with the verifier pick chooses (bearerVerifier or
// idTokenVerifier).
// A token whose signature does not verify is checked once more against
// the keys of a new discovery, within o.rediscover's budget: go-oidc's key
// set can answer a token of a key the issuer rotated in with the keys of
// the fetch that just ended (a token that arrives between the fetch's end
// and its clean-up waits on that fetch, coreos/go-oidc's RemoteKeySet),
// and a new discovery's key set fetches anew. The new provider replaces
// the old one when its keys verify the token. Safe for concurrent use.
func (o *oidcAuth) verify(ctx context.Context, raw string, pick func(verifiers) *oidc.IDTokenVerifier) (*oidc.IDToken, error) {
	o.mu.Lock()
	v := o.verifiers
	o.mu.Unlock()
	tok, err := pick(v).Verify(o.ctx(ctx), raw)
	if err == nil || !strings.Contains(err.Error(), "failed to verify signature") || !o.rediscover.Allow() {
		return tok, err
	}
	p, derr := o.discover(ctx)
	if derr != nil {
		o.log.Warn("OIDC: the issuer's discovery after a signature that did not verify failed; the token is refused", "issuer", o.cfg.Issuer, "err", derr)
		return nil, err
	}
	fresh := o.verifiersOf(p)
	tok, err = pick(fresh).Verify(o.ctx(ctx), raw)
	if err == nil {
		o.mu.Lock()
		o.use(p, fresh)
		o.mu.Unlock()
		o.log.Info("OIDC: the issuer's keys changed; discovered it again", "issuer", o.cfg.Issuer)
	}
	return tok, err
}

var errIssuerUnreachable = &apiError{status: http.StatusServiceUnavailable, body: api.Error{Code: "Unavailable",
	Message: "the OIDC issuer cannot be reached now, so its tokens cannot be checked; try again later, or use an amends token"}}

// verifyBearer checks a bearer JWT: signature by a key of the issuer's
// JWKS, issuer, audience and expiry, then the role claim. The error is
// errIssuerUnreachable, a plain error saying why the token is refused, or
// an *apiError 403 NoRole.
func (o *oidcAuth) verifyBearer(ctx context.Context, raw string) (principal, error) {
	if _, err := o.ready(ctx); err != nil {
		return principal{}, errIssuerUnreachable
	}
	tok, err := o.verify(ctx, raw, bearerVerifier)
	if err != nil {
		return principal{}, plainOIDCError(err)
	}
	return o.principal(tok)
}

// plainOIDCError drops go-oidc's prefix and cuts the message.
func plainOIDCError(err error) error {
	var expired *oidc.TokenExpiredError
	if errors.As(err, &expired) {
		return errors.New("the token expired at " + expired.Expiry.UTC().Format(time.RFC3339))
	}
	return errors.New(cut(strings.TrimPrefix(err.Error(), "oidc: ")))
}

// principal maps a verified token to its principal: the name claim (or
// sub), the role the role claim grants, the issuer and subject, the
// token's expiry.
func (o *oidcAuth) principal(tok *oidc.IDToken) (principal, error) {
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return principal{}, errors.New("the token's claims do not decode")
	}
	role, ok := o.role(claims)
	if !ok {
		return principal{}, &apiError{status: http.StatusForbidden, body: api.Error{Code: "NoRole",
			Message: fmt.Sprintf("the identity has no amends role: its claim %q holds none of %s (operator) or %s (viewer); ask the issuer's administrator for one",
				o.cfg.RoleClaim, strings.Join(o.cfg.OperatorRoles, ", "), strings.Join(o.cfg.ViewerRoles, ", "))}}
	}
	subject := tok.Issuer + "#" + tok.Subject
	if tok.Subject == "" || !printableName(tok.Subject) || len(subject) > maxSubjectBytes {
		return principal{}, errors.New("the token's sub claim is not up to 256 bytes of printable text")
	}
	name, err := o.actor(claims, subject)
	if err != nil {
		return principal{}, err
	}
	return principal{name: name, role: role, via: viaOIDC, subject: subject, expires: tok.Expiry}, nil
}

// actor is the actor's name of a token's claims (see OIDCConfig.NameClaim):
// the issuer-qualified subject, or "oidc:" and the name claim's value (an
// e-mail only when verified). A name over audit.MaxActorBytes is an error.
func (o *oidcAuth) actor(claims map[string]any, subject string) (string, error) {
	name := subject
	switch c := o.cfg.NameClaim; c {
	case "sub":
	case "email":
		if v, _ := claims["email"].(string); printableName(v) && emailVerified(claims["email_verified"]) {
			name = "oidc:" + v
		}
	default:
		if v, _ := claims[c].(string); printableName(v) {
			name = "oidc:" + v
		}
	}
	if len(name) > audit.MaxActorBytes {
		return "", fmt.Errorf("the token's actor name (%s) is over %d bytes, the limit of an actor; have the server's --oidc-name-claim name a shorter claim (email, or one the issuer's administrators set)", cut(name), audit.MaxActorBytes)
	}
	return name, nil
}

// emailVerified reads an email_verified claim: true, or "true" as some
// issuers (Amazon Cognito) send it.
func emailVerified(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return false
}

// printableName reports whether s can be an actor's name.
func printableName(s string) bool {
	return s != "" && checkText("name", s, MaxParamBytes) == nil && !strings.ContainsFunc(s, refusedInText)
}

// role finds the role the claims grant.
func (o *oidcAuth) role(claims map[string]any) (Role, bool) {
	var v any = claims
	for part := range strings.SplitSeq(o.cfg.RoleClaim, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = m[part]
	}
	var held []string
	switch x := v.(type) {
	case string:
		held = strings.Fields(x)
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				held = append(held, s)
			}
		}
	}
	has := func(want []string) bool {
		return slices.ContainsFunc(held, func(h string) bool { return slices.Contains(want, h) })
	}
	switch {
	case has(o.cfg.OperatorRoles):
		return RoleOperator, true
	case has(o.cfg.ViewerRoles):
		return RoleViewer, true
	}
	return "", false
}
