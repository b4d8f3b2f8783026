package main

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/server"
)

// httpSecHelp explains the API's transport and identity flags in serve's
// help.
const httpSecHelp = `TLS: --tls-cert and --tls-key serve the API and dashboard over HTTPS (TLS
1.2 with AEAD cipher suites, or 1.3; --tls-min-version 1.3 for 1.3 only);
the files are checked on each handshake (at most once a second) and a
changed certificate is served without a restart.
--tls-client-ca also requires client certificates signed by its CAs
(mutual TLS). Under TLS every answer carries Strict-Transport-Security.
Behind a TLS-terminating proxy, --trusted-proxy CIDR (repeatable) believes
its X-Forwarded-Proto (Secure cookies, HSTS) and X-Forwarded-For (the
client's address for rate limits and the audit log). Beyond loopback, serve
refuses to start without TLS or a trusted proxy unless --insecure-http
says plain HTTP is meant (it is taken from the command line or --config
only, never from the environment).

Host names: the API answers only requests whose Host is an IP address,
localhost, the --http host, or a name given with --http-allowed-host
(repeatable; *.example.com for every name below example.com, * for any):
the defence against DNS rebinding.

Tokens: entries name:role:secret, where the secret is stored hashed
(sha256:HEX, made by amends token new) or, with a warning, as plaintext;
" expires=2027-01-31" after an entry ends it then. The tokens file is
re-read when it changes (checked every second): a removed or changed token
stops working at once and its sessions and live streams end. A file that
does not parse keeps the last good tokens, with its error logged. A tokens
file readable by its group or others is warned about.

OIDC: --oidc-issuer and --oidc-audience accept the issuer's JWTs as bearer
tokens, checked against its JWKS (fetched again when a token names an
unknown key, so the issuer may rotate keys), the role from --oidc-role-claim
(values --oidc-operator-role, --oidc-viewer-role). With --oidc-client-id
(and --oidc-client-secret-env, the variable that holds its secret) the
dashboard also signs in through the issuer; register
https://HOST/ui/v1/oidc/callback (or --oidc-redirect-url) there.

Sessions of the dashboard are kept in the KV bucket amends_sessions, shared
by every serve: a restart or another instance signs nobody out. A
principal holds at most 20; a client address gets 20 failed
authentications, one more every 6 s, before its requests are answered 429.
Failed authentications, sign-ins, sign-outs and reads of original events go
to the audit stream AMENDS_audit (amends audit, GET /api/v1/audit; operators).`

// httpSecFlags are serve's flags for the API's transport and identity.
type httpSecFlags struct {
	allowedHosts   []string
	tlsCert        string
	tlsKey         string
	tlsClientCA    string
	tlsMin         string
	trustedProxies []string
	insecureHTTP   bool

	oidcIssuer       string
	oidcAudience     string
	oidcClientID     string
	oidcSecretEnv    string
	oidcRoleClaim    string
	oidcOperatorRole []string
	oidcViewerRole   []string
	oidcNameClaim    string
	oidcCA           string
	oidcRedirectURL  string
}

// add declares the flags that may come from the environment.
func (f *httpSecFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.allowedHosts, "http-allowed-host", nil, "host name the API answers to besides IP addresses, localhost and the --http host (repeatable; *.example.com, or * for any)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate chain of the API's HTTPS (with --tls-key); reloaded when it changes")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "PEM CAs whose client certificates the API requires (mutual TLS; needs --tls-cert)")
	fs.StringVar(&f.tlsMin, "tls-min-version", "1.2", "the lowest TLS version served: 1.2 (with AEAD cipher suites only) or 1.3")
	fs.StringSliceVar(&f.trustedProxies, "trusted-proxy", nil, "CIDR or address of a proxy whose X-Forwarded-Proto and X-Forwarded-For the API believes (repeatable)")
	fs.StringVar(&f.oidcIssuer, "oidc-issuer", "", "OIDC issuer URL whose JWTs are bearer tokens (https; http only on loopback)")
	fs.StringVar(&f.oidcAudience, "oidc-audience", "", "the aud a bearer JWT of --oidc-issuer must carry")
	fs.StringVar(&f.oidcClientID, "oidc-client-id", "", "the dashboard's client id at --oidc-issuer: sign-in through the issuer")
	fs.StringVar(&f.oidcSecretEnv, "oidc-client-secret-env", "", "environment variable holding --oidc-client-id's secret (none for a public client)")
	fs.StringVar(&f.oidcRoleClaim, "oidc-role-claim", "roles", "claim holding the roles (a string or array; dotted path into objects, e.g. realm_access.roles)")
	fs.StringSliceVar(&f.oidcOperatorRole, "oidc-operator-role", []string{"amends-operator"}, "value of --oidc-role-claim that grants the operator role (repeatable)")
	fs.StringSliceVar(&f.oidcViewerRole, "oidc-viewer-role", []string{"amends-viewer"}, "value of --oidc-role-claim that grants the viewer role (repeatable)")
	fs.StringVar(&f.oidcNameClaim, "oidc-name-claim", "sub", "the actor of an OIDC identity: sub (ISSUER#SUB), email (oidc:ADDRESS when email_verified, else ISSUER#SUB) or another claim the issuer's administrators set (oidc:VALUE)")
	fs.StringVar(&f.oidcCA, "oidc-ca", "", "PEM CAs of --oidc-issuer's TLS certificate (default: the system's)")
	fs.StringVar(&f.oidcRedirectURL, "oidc-redirect-url", "", "the sign-in callback registered at the issuer (default https://HOST/ui/v1/oidc/callback as the browser reached it)")
}

// addCommandLineOnly declares the flags that never come from the
// environment: they lower a defence.
func (f *httpSecFlags) addCommandLineOnly(fs *pflag.FlagSet) {
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "serve plain HTTP beyond loopback without TLS or a trusted proxy (tokens and sessions then cross the network in clear); not from the environment")
}

// config validates the flags into cfg; httpHost is --http's host. Every
// error is a usage error naming the flag.
func (f *httpSecFlags) config(cfg *serveConfig, httpHost string, env func(string) (string, bool), logger *slog.Logger) error {
	for _, h := range f.allowedHosts {
		if err := server.CheckAllowedHost(h); err != nil {
			return usageErrorf("--http-allowed-host: %v", err)
		}
	}
	cfg.allowedHosts = append([]string{}, f.allowedHosts...)
	if httpHost != "" && !isIPLiteral(httpHost) && server.CheckAllowedHost(httpHost) == nil {
		cfg.allowedHosts = append(cfg.allowedHosts, httpHost)
	}
	proxies, err := parseTrustedProxies(f.trustedProxies)
	if err != nil {
		return err
	}
	cfg.trustedProxies = append(cfg.trustedProxies, proxies...)
	if err := f.tlsConfig(cfg, logger); err != nil {
		return err
	}
	return f.oidc(cfg, env)
}

// requireTLS refuses plain HTTP beyond loopback: without TLS, a trusted
// proxy (which terminates TLS) or --insecure-http.
func (f *httpSecFlags) requireTLS(cfg *serveConfig, httpHost string) error {
	if !isLoopback(httpHost) && cfg.tls == nil && len(cfg.trustedProxies) == 0 && !f.insecureHTTP {
		return usageErrorf("--http %s is beyond loopback without TLS: tokens, session cookies and records would cross the network in clear. "+
			"Serve HTTPS (--tls-cert and --tls-key), or name the TLS-terminating proxy in front (--trusted-proxy CIDR), or say plain HTTP is meant (--insecure-http)", cfg.http)
	}
	return nil
}

// oidc validates the OIDC flags into cfg.oidc.
func (f *httpSecFlags) oidc(cfg *serveConfig, env func(string) (string, bool)) error {
	if f.oidcIssuer == "" {
		for _, name := range []string{"oidc-audience", "oidc-client-id", "oidc-client-secret-env", "oidc-ca", "oidc-redirect-url"} {
			if v := f.value(name); v != "" {
				return usageErrorf("--%s configures OIDC: set --oidc-issuer too", name)
			}
		}
		return nil
	}
	if err := checkOIDCURL("oidc-issuer", f.oidcIssuer); err != nil {
		return err
	}
	if strings.TrimSpace(f.oidcAudience) == "" {
		return usageErrorf("--oidc-issuer needs --oidc-audience: the aud its JWTs carry for this API (often the client id)")
	}
	if !validClaimName(f.oidcNameClaim) {
		return usageErrorf("--oidc-name-claim %q is not a claim's name: give sub, email or another claim (up to 64 letters, digits, '_', '-', '.' or ':')", clipText(f.oidcNameClaim, 64))
	}
	o := &server.OIDCConfig{
		Issuer: f.oidcIssuer, Audience: f.oidcAudience, ClientID: f.oidcClientID,
		RoleClaim: f.oidcRoleClaim, OperatorRoles: f.oidcOperatorRole, ViewerRoles: f.oidcViewerRole, NameClaim: f.oidcNameClaim,
		RedirectURL: f.oidcRedirectURL,
	}
	if f.oidcSecretEnv != "" {
		if f.oidcClientID == "" {
			return usageErrorf("--oidc-client-secret-env is the secret of --oidc-client-id: set that too")
		}
		v, ok := env(f.oidcSecretEnv)
		if !ok || v == "" {
			return usageErrorf("--oidc-client-secret-env: the variable %s is not set", f.oidcSecretEnv)
		}
		o.ClientSecret = v
	}
	if f.oidcRedirectURL != "" {
		if err := checkOIDCURL("oidc-redirect-url", f.oidcRedirectURL); err != nil {
			return err
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if f.oidcCA != "" {
		pem, err := os.ReadFile(f.oidcCA)
		if err != nil {
			return usageErrorf("--oidc-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return usageErrorf("--oidc-ca %s holds no PEM certificate", f.oidcCA)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		client.Transport = tr
	}
	o.HTTPClient = client
	cfg.oidc = o
	return nil
}

// value is a string flag's value by name (for "set without its parent"
// checks).
func (f *httpSecFlags) value(name string) string {
	switch name {
	case "oidc-audience":
		return f.oidcAudience
	case "oidc-client-id":
		return f.oidcClientID
	case "oidc-client-secret-env":
		return f.oidcSecretEnv
	case "oidc-ca":
		return f.oidcCA
	case "oidc-redirect-url":
		return f.oidcRedirectURL
	}
	return ""
}

// checkOIDCURL checks an OIDC URL flag: https, or http on loopback (a
// local issuer), with a host and no query or fragment.
func checkOIDCURL(flag, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return usageErrorf("--%s %q: want an https URL such as https://login.example.com/realms/ops", flag, s)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return usageErrorf("--%s %q: an issuer beyond loopback must use https (its keys and tokens would cross the network in clear)", flag, s)
	}
	return nil
}

// parsePrefix reads a CIDR or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// isIPLiteral reports whether host is an IP address.
func isIPLiteral(host string) bool { return net.ParseIP(strings.Trim(host, "[]")) != nil }

// validClaimName reports whether s can name a claim of --oidc-name-claim:
// 1 to 64 ASCII letters, digits, '_', '-', '.' or ':'.
func validClaimName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// tlsConfig checks the TLS flags and sets cfg's certificate reloader when
// --tls-cert is given.
func (f *httpSecFlags) tlsConfig(cfg *serveConfig, logger *slog.Logger) error {
	switch {
	case f.tlsCert == "" && f.tlsKey != "", f.tlsCert != "" && f.tlsKey == "":
		return usageErrorf("--tls-cert and --tls-key go together: give both")
	case f.tlsClientCA != "" && f.tlsCert == "":
		return usageErrorf("--tls-client-ca requires client certificates over TLS: give --tls-cert and --tls-key too")
	case f.tlsMin != "1.2" && f.tlsMin != "1.3":
		return usageErrorf("--tls-min-version must be 1.2 or 1.3, got %q", f.tlsMin)
	case f.tlsMin != "1.2" && f.tlsCert == "":
		return usageErrorf("--tls-min-version %s needs TLS: give --tls-cert and --tls-key too", f.tlsMin)
	case f.tlsCert != "":
		minVersion := uint16(tls.VersionTLS12)
		if f.tlsMin == "1.3" {
			minVersion = tls.VersionTLS13
		}
		r, err := newCertReloader(tlsFiles{cert: f.tlsCert, key: f.tlsKey, clientCA: f.tlsClientCA, minVersion: minVersion}, logger.With("component", "http"))
		if err != nil {
			return usageErrorf("%v", err)
		}
		cfg.tls = r
	}
	return nil
}

// parseTrustedProxies reads the --trusted-proxy CIDRs or addresses.
func parseTrustedProxies(proxies []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range proxies {
		prefix, err := parsePrefix(p)
		if err != nil {
			return nil, usageErrorf("--trusted-proxy %q: want a CIDR such as 10.0.0.0/8 or an address such as 10.0.0.5", p)
		}
		out = append(out, prefix)
	}
	return out, nil
}
