package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// tlsFiles are the files of the API's TLS: its certificate chain and key
// (PEM) and, for mutual TLS, the CAs that sign client certificates.
type tlsFiles struct {
	cert, key, clientCA string
	// minVersion is the lowest TLS version served: tls.VersionTLS12
	// (the default) or tls.VersionTLS13 (--tls-min-version 1.3).
	minVersion uint16
}

// aeadSuites are the TLS 1.2 cipher suites serve offers: Go's secure
// ones (tls.CipherSuites) without the CBC suites, whose MAC is SHA-1 or
// that invite padding-oracle attacks; TLS 1.3's suites are all AEAD and
// not configurable.
var aeadSuites = func() []uint16 {
	var out []uint16
	for _, cs := range tls.CipherSuites() {
		if !strings.Contains(cs.Name, "_CBC_") && slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
			out = append(out, cs.ID)
		}
	}
	return out
}()

// minVersionOrDefault returns files' lowest TLS version (TLS 1.2 if unset).
func (f tlsFiles) minVersionOrDefault() uint16 { return max(f.minVersion, tls.VersionTLS12) }

// certCheckEvery is how often, at most, a handshake checks whether the
// TLS files changed.
const certCheckEvery = time.Second

// certReloader serves the API's certificate and reloads it when its files
// change, without a restart: every handshake checks the files' stamps (at
// most once per certCheckEvery) and, if one changed, loads them anew. A
// change that does not load (a key that does not match the certificate
// yet, half a file) is logged and the last good certificate kept; the
// next check tries again. Safe for concurrent use.
type certReloader struct {
	files  tlsFiles
	every  time.Duration
	logger *slog.Logger

	mu      sync.Mutex
	checked time.Time
	stamps  [3]fileStamp
	current *tls.Config
	// loads counts the successful loads (tests).
	loads int
}

// newCertReloader loads files; an error names the file and what is wrong
// with it.
func newCertReloader(files tlsFiles, logger *slog.Logger) (*certReloader, error) {
	r := &certReloader{files: files, every: certCheckEvery, logger: logger}
	stamps, cfg, err := r.load()
	if err != nil {
		return nil, err
	}
	r.stamps, r.current, r.checked, r.loads = stamps, cfg, time.Now(), 1
	warnIfShared(logger, "the TLS key file", files.key)
	return r, nil
}

// config is the listener's TLS configuration: TLS 1.2 (AEAD suites only)
// or later, HTTP/1.1, the current certificate for each handshake.
func (r *certReloader) config() *tls.Config {
	return &tls.Config{
		MinVersion:         r.files.minVersionOrDefault(),
		CipherSuites:       aeadSuites,
		NextProtos:         []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.get(time.Now()), nil },
	}
}

// get returns the configuration of a handshake at now, reloading the
// files first if they changed.
func (r *certReloader) get(now time.Time) *tls.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.checked) < r.every && now.After(r.checked) {
		return r.current
	}
	r.checked = now
	stamps, file, err := r.stamp()
	if err != nil {
		r.logger.Warn("TLS: a file cannot be read; serving the last certificate", "file", file, "err", err)
		return r.current
	}
	if stamps == r.stamps {
		return r.current
	}
	stamps, cfg, err := r.load()
	if err != nil {
		r.logger.Warn("TLS: the changed files do not load; serving the last certificate until they do", "err", err)
		return r.current
	}
	r.stamps, r.current = stamps, cfg
	r.loads++
	r.logger.Info("TLS: certificate reloaded", "cert", r.files.cert, "not_after", cfg.Certificates[0].Leaf.NotAfter.UTC().Format(time.RFC3339))
	return cfg
}

// stamp reads the stamps of the certificate, key and client CA files (a
// file not given has the zero stamp); file is the one that cannot be read.
func (r *certReloader) stamp() (stamps [3]fileStamp, file string, err error) {
	for i, p := range []string{r.files.cert, r.files.key, r.files.clientCA} {
		if p == "" {
			continue
		}
		if stamps[i], err = stampOf(p); err != nil {
			return stamps, p, err
		}
	}
	return stamps, "", nil
}

// load reads the files into a handshake's configuration.
func (r *certReloader) load() ([3]fileStamp, *tls.Config, error) {
	stamps, _, err := r.stamp()
	if err != nil {
		return stamps, nil, err
	}
	cert, err := tls.LoadX509KeyPair(r.files.cert, r.files.key)
	if err != nil {
		return stamps, nil, fmt.Errorf("--tls-cert %s and --tls-key %s: %v", r.files.cert, r.files.key, plainTLSError(err))
	}
	if len(cert.Certificate) == 0 {
		return stamps, nil, fmt.Errorf("--tls-cert %s holds no certificate", r.files.cert)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return stamps, nil, fmt.Errorf("--tls-cert %s: %v", r.files.cert, err)
		}
	}
	cfg := &tls.Config{MinVersion: r.files.minVersionOrDefault(), CipherSuites: aeadSuites, NextProtos: []string{"http/1.1"}, Certificates: []tls.Certificate{cert}}
	if r.files.clientCA != "" {
		pem, err := os.ReadFile(r.files.clientCA)
		if err != nil {
			return stamps, nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return stamps, nil, fmt.Errorf("--tls-client-ca %s holds no PEM certificate", r.files.clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return stamps, cfg, nil
}

// plainTLSError says what crypto/tls's key-pair errors mean.
func plainTLSError(err error) error {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return err
	}
	return fmt.Errorf("%v (the key must be the certificate's, both PEM)", err)
}
