package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// tlsFiles are the files of the API's TLS: its certificate chain and key
// (PEM) and, for mutual TLS, the CAs that sign client certificates.
type tlsFiles struct {
	cert, key, clientCA string
}

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

// config is the listener's TLS configuration: TLS 1.2 or later, HTTP/1.1,
// the current certificate for each handshake.
func (r *certReloader) config() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
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
	var stamps [3]fileStamp
	for i, p := range []string{r.files.cert, r.files.key, r.files.clientCA} {
		if p == "" {
			continue
		}
		st, err := stampOf(p)
		if err != nil {
			r.logger.Warn("TLS: a file cannot be read; serving the last certificate", "file", p, "err", err)
			return r.current
		}
		stamps[i] = st
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

// load reads the files into a handshake's configuration.
func (r *certReloader) load() ([3]fileStamp, *tls.Config, error) {
	var stamps [3]fileStamp
	for i, p := range []string{r.files.cert, r.files.key, r.files.clientCA} {
		if p == "" {
			continue
		}
		st, err := stampOf(p)
		if err != nil {
			return stamps, nil, err
		}
		stamps[i] = st
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
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, Certificates: []tls.Certificate{cert}}
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
