package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testca"
	"github.com/amends-dev/amends/internal/testwait"

	"github.com/amends-dev/amends/server"
)

// httpsClient trusts ca and presents certs.
func httpsClient(ca *testca.CA, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: waitLimit, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool, Certificates: certs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
}

// servedSerial is the serial of the certificate the server at url
// presents now.
func servedSerial(t *testing.T, ca *testca.CA, url string) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"})
	require.NoError(t, err)
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// serve serves HTTPS with --tls-cert and --tls-key; every answer carries
// HSTS and cookies are Secure; a new certificate written over the files is
// served without a restart, and a broken one is not (the last good one
// stays).
func TestServeOverTLSReloadsTheCertificate(t *testing.T) {
	ca := testca.New(t)
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, 100, false).Write(t, dir, "server")
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tls-cert", certFile, "--tls-key", keyFile)
	require.True(t, strings.HasPrefix(r.info.HTTPURL, "https://"), r.info.HTTPURL)
	hc := httpsClient(ca)
	resp, err := hc.Get(r.info.HTTPURL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))
	resp, err = hc.Get(r.info.HTTPURL + "/ui/v1/session")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a local session on loopback without tokens")
	assert.Contains(t, resp.Header.Get("Set-Cookie"), "Secure")
	assert.Equal(t, int64(100), servedSerial(t, ca, r.info.HTTPURL))

	// A half-written change (a key that is not the certificate's) keeps
	// the last good certificate...
	next := ca.Issue(t, 200, false)
	require.NoError(t, os.WriteFile(certFile, next.CertPEM, 0o600))
	// The files are checked on a handshake: shake hands until the
	// check has seen the change.
	require.Eventually(t, func() bool {
		return servedSerial(t, ca, r.info.HTTPURL) == 100 && strings.Contains(c.stderr.String(), "the changed files do not load")
	}, waitLimit, 50*time.Millisecond, "a broken change is seen and not served")
	// ...and once the key follows, the new one is served.
	require.NoError(t, os.WriteFile(keyFile, next.KeyPEM, 0o600))
	require.Eventually(t, func() bool { return servedSerial(t, ca, r.info.HTTPURL) == 200 }, waitLimit, 50*time.Millisecond, "the new certificate is served")
	assert.Contains(t, c.stderr.String(), "TLS: certificate reloaded")

	// Plain HTTP to the TLS port is no way in.
	plain, err := http.Get("http://" + strings.TrimPrefix(r.info.HTTPURL, "https://") + "/api/v1/records")
	if err == nil {
		body, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "Go's TLS server answers plain HTTP with 400: %s", body)
	}
	require.Equal(t, exitOK, r.stop(t))
}

// waitForLog polls c's stderr until it holds s.
func waitForLog(t *testing.T, c *cli, s string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("the log to say %q", s), func() bool { return strings.Contains(c.stderr.String(), s) })
}

// serveWithClientCA starts serve over TLS with a certificate of ca and
// --tls-client-ca a file holding clientCAs; it returns that file.
func (c *cli) serveWithClientCA(t *testing.T, ca *testca.CA, clientCAs []byte) (*running, string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, 1, false).Write(t, dir, "server")
	caFile := filepath.Join(dir, "clients.pem")
	require.NoError(t, os.WriteFile(caFile, clientCAs, 0o600))
	return c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", caFile), caFile
}

// --tls-client-ca requires a client certificate of its CAs (mutual TLS).
func TestServeRequiresClientCertificatesWithAClientCA(t *testing.T) {
	ca, clients, stranger := testca.New(t), testca.New(t), testca.New(t)
	var c cli
	r, _ := c.serveWithClientCA(t, ca, clients.PEM)
	_, err := httpsClient(ca).Get(r.info.HTTPURL + "/healthz")
	require.Error(t, err, "no client certificate: the handshake fails")
	_, err = httpsClient(ca, stranger.Issue(t, 2, true).TLSCert(t)).Get(r.info.HTTPURL + "/healthz")
	require.Error(t, err, "a certificate of another CA fails too")
	resp, err := httpsClient(ca, clients.Issue(t, 3, true).TLSCert(t)).Get(r.info.HTTPURL + "/healthz")
	require.NoError(t, err, "a certificate of the client CA is let in")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, exitOK, r.stop(t))
}

// --tls-client-ca is reloaded as the certificate is: once the file names
// another CA, the old CA's clients are refused and the new one's let in,
// without a restart; a file that no longer holds a certificate keeps the
// last good CAs.
func TestServeReloadsTheClientCA(t *testing.T) {
	ca, first, second := testca.New(t), testca.New(t), testca.New(t)
	var c cli
	r, caFile := c.serveWithClientCA(t, ca, first.PEM)
	firstClient, secondClient := httpsClient(ca, first.Issue(t, 2, true).TLSCert(t)), httpsClient(ca, second.Issue(t, 3, true).TLSCert(t))
	admitted := func(hc *http.Client) bool {
		resp, err := hc.Get(r.info.HTTPURL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	require.True(t, admitted(firstClient))
	require.False(t, admitted(secondClient))

	require.NoError(t, os.WriteFile(caFile, []byte("not a certificate\n"), 0o600))
	// The files are checked on a handshake: shake hands until the check
	// has seen the change.
	require.Eventually(t, func() bool {
		return admitted(firstClient) && strings.Contains(c.stderr.String(), "the changed files do not load")
	}, waitLimit, 50*time.Millisecond, "a broken change is seen and the last good CAs kept")
	assert.False(t, admitted(secondClient))

	require.NoError(t, os.WriteFile(caFile, second.PEM, 0o600))
	require.Eventually(t, func() bool { return admitted(secondClient) }, waitLimit, 50*time.Millisecond, "the new CA's clients are let in")
	assert.False(t, admitted(firstClient), "and the old CA's are refused")
	require.Equal(t, exitOK, r.stop(t))
}

// Beyond loopback serve needs TLS, a trusted proxy, or --insecure-http on
// the command line (never from the environment); TLS flags are checked.
func TestServeRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	ca := testca.New(t)
	certFile, _ := ca.Issue(t, 1, false).Write(t, dir, "server")
	tokens := []string{"--tokens", "ops:operator:" + server.NewSecret()}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"plain beyond loopback", append([]string{"--http", "0.0.0.0:0"}, tokens...), nil, "beyond loopback without TLS"},
		{"insecure from the environment", append([]string{"--http", "0.0.0.0:0"}, tokens...), map[string]string{"AMENDS_INSECURE_HTTP": "true"}, "beyond loopback without TLS"},
		{"cert without key", []string{"--tls-cert", certFile}, nil, "--tls-cert and --tls-key go together"},
		{"client CA without TLS", []string{"--tls-client-ca", certFile}, nil, "--tls-client-ca requires"},
		{"a key that is not the cert's", []string{"--tls-cert", certFile, "--tls-key", certFile}, nil, "--tls-cert"},
		{"a bad proxy", []string{"--trusted-proxy", "10.0.0.0/33"}, nil, "--trusted-proxy"},
		{"a bad allowed host", []string{"--http-allowed-host", "https://amends.example.com"}, nil, "--http-allowed-host"},
		{"an http issuer beyond loopback", []string{"--oidc-issuer", "http://login.example.com", "--oidc-audience", "amends"}, nil, "must use https"},
		{"an issuer without audience", []string{"--oidc-issuer", "https://login.example.com"}, nil, "needs --oidc-audience"},
		{"a client secret variable that is unset", []string{"--oidc-issuer", "https://login.example.com", "--oidc-audience", "a", "--oidc-client-id", "a", "--oidc-client-secret-env", "NOPE"}, nil, "NOPE is not set"},
		{"a name claim that is no claim", []string{"--oidc-issuer", "https://login.example.com", "--oidc-audience", "a", "--oidc-name-claim", "e mail"}, nil, "--oidc-name-claim \"e mail\" is not a claim's name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cli{env: tc.env}
			code := c.run(t, append([]string{"serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1"}, tc.args...)...)
			assert.Equal(t, exitUsage, code, c.stderr.String())
			assert.Contains(t, c.stderr.String(), tc.want)
		})
	}
	// Behind a trusted proxy, or with --insecure-http, it starts.
	for _, extra := range [][]string{{"--trusted-proxy", "10.0.0.0/8"}, {"--insecure-http"}} {
		var c cli
		r := c.startServe(t, append(append([]string{"serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--http", "0.0.0.0:0"}, tokens...), extra...)...)
		require.Equal(t, exitOK, r.stop(t), c.stderr.String())
	}
}

// The tokens file is re-read when it changes: a removed token stops
// working within seconds, a broken file keeps the last good tokens, and
// plaintext secrets and a file others can read are warned about.
func TestServeReloadsTheTokensFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	keep, drop := server.NewSecret(), server.NewSecret()
	write := func(text string, mode os.FileMode) {
		// Write a new file and rename it over the old one, as editors and
		// secret mounts do.
		tmp := file + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(text), mode))
		require.NoError(t, os.Chmod(tmp, mode))
		require.NoError(t, os.Rename(tmp, file))
	}
	write(server.TokenLine("keep", server.RoleViewer, keep, time.Time{})+"\ndrop:viewer:"+drop+"\n", 0o644)
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tokens-file", file)
	status := func(secret string) int {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", r.info.HTTPURL+"/api/v1/count", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, status(drop))
	waitForLog(t, &c, "plaintext secrets")
	assert.Contains(t, c.stderr.String(), "tokens=drop")
	assert.Contains(t, c.stderr.String(), "can be read by other users")

	write(server.TokenLine("keep", server.RoleViewer, keep, time.Time{})+"\n", 0o600)
	require.Eventually(t, func() bool { return status(drop) == http.StatusUnauthorized }, waitLimit, 50*time.Millisecond, "the removed token stops working")
	assert.Equal(t, http.StatusOK, status(keep))
	waitForLog(t, &c, "tokens file reloaded")

	write("keep:viewer\n", 0o600)
	waitForLog(t, &c, "the changed tokens file does not load")
	assert.Equal(t, http.StatusOK, status(keep), "a broken file keeps the last good tokens")
	require.Equal(t, exitOK, r.stop(t))
}

// Finding 1 of "authentication never falls open": emptying the tokens
// file while serve ran switched authentication off (an anonymous
// circuits open answered 200 as actor local). Tokenless mode is a
// start-up decision: the empty file is refused, the last good tokens
// stay, /readyz and the log say why, the refusal is counted, and serve is
// ready again once the file holds tokens.
func TestAnEmptiedTokensFileKeepsTheLastGoodTokens(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	secret := server.NewSecret()
	write := func(text string) {
		tmp := file + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(text), 0o600))
		require.NoError(t, os.Rename(tmp, file))
	}
	line := server.TokenLine("ops", server.RoleOperator, secret, time.Time{}) + "\n"
	write(line)
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tokens-file", file)
	do := func(method, path, bearer string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), method, r.info.HTTPURL+path, strings.NewReader(`{"reason":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	open := "/api/v1/circuits/shop.Mailer.onOrder/open"
	code, _ := do("POST", open, "")
	require.Equal(t, http.StatusUnauthorized, code)

	write("# every token removed\n")
	waitForLog(t, &c, "changed to hold no tokens")
	code, body := do("POST", open, "")
	assert.Equal(t, http.StatusUnauthorized, code, "still authenticated: %s", body)
	code, _ = do("GET", "/api/v1/count", secret)
	assert.Equal(t, http.StatusOK, code, "the last good token still works")
	code, body = do("GET", "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "changed to hold no tokens")
	code, body = do("GET", "/metrics", secret)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "amends_token_changes_refused_total 1", "counted")

	write(line)
	require.Eventually(t, func() bool { code, _ := do("GET", "/readyz", ""); return code == http.StatusOK }, waitLimit, 50*time.Millisecond,
		"ready again once the file holds tokens")
	require.Equal(t, exitOK, r.stop(t))
}

// Finding 6 of "authentication never falls open": TLS 1.2 offered the
// CBC-SHA1 suites. Only AEAD suites are offered, and --tls-min-version 1.3
// serves TLS 1.3 only.
func TestServeOffersOnlyAEADSuites(t *testing.T) {
	ca := testca.New(t)
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, 100, false).Write(t, dir, "server")
	hello := func(url string, cfg *tls.Config) error {
		cfg.RootCAs, cfg.ServerName = ca.Pool, "127.0.0.1"
		c, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), cfg)
		if err == nil {
			c.Close()
		}
		return err
	}
	var cbc []uint16
	for _, cs := range tls.CipherSuites() {
		if strings.Contains(cs.Name, "_CBC_") {
			cbc = append(cbc, cs.ID)
		}
	}
	require.NotEmpty(t, cbc)
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tls-cert", certFile, "--tls-key", keyFile)
	assert.NoError(t, hello(r.info.HTTPURL, &tls.Config{MaxVersion: tls.VersionTLS12}), "TLS 1.2 with an AEAD suite")
	assert.Error(t, hello(r.info.HTTPURL, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: cbc}), "no CBC suite")
	assert.NoError(t, hello(r.info.HTTPURL, &tls.Config{MinVersion: tls.VersionTLS13}))
	require.Equal(t, exitOK, r.stop(t))

	var c13 cli
	r = c13.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--tls-cert", certFile, "--tls-key", keyFile, "--tls-min-version", "1.3")
	assert.Error(t, hello(r.info.HTTPURL, &tls.Config{MaxVersion: tls.VersionTLS12}), "TLS 1.3 only")
	assert.NoError(t, hello(r.info.HTTPURL, &tls.Config{}))
	require.Equal(t, exitOK, r.stop(t))

	var bad cli
	assert.Equal(t, exitUsage, bad.run(t, "serve", "--data-dir", t.TempDir(), "--tls-min-version", "1.1", "--tls-cert", certFile, "--tls-key", keyFile))
	assert.Contains(t, bad.stderr.String(), "--tls-min-version must be 1.2 or 1.3")
}
