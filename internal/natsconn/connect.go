package natsconn

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/nats-io/nats.go"
)

// Defaults of ClientConfig.
const (
	DefaultClientName    = "amends"
	DefaultReconnectWait = 2 * time.Second
)

// ClientConfig configures a connection to an existing NATS server or
// cluster. Zero values mean the documented defaults.
type ClientConfig struct {
	// URL is one server URL or several separated by commas, such as
	// "nats://n1:4222,nats://n2:4222". Required. Listing several servers
	// lets the first connection succeed while one is down; once connected,
	// the client learns the rest of the cluster from the server.
	URL string
	// CredsFile is a NATS credentials file (a user JWT and its NKey seed),
	// as nsc or an operator issues it.
	CredsFile string
	// NKeySeedFile is a file holding a user NKey seed, for servers that
	// authenticate NKeys without JWTs. It cannot be combined with CredsFile.
	NKeySeedFile string
	// TLSCAFile is a PEM file of the certificate authorities that sign the
	// servers' certificates, for servers with a private CA.
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are the PEM client certificate and key for
	// servers that verify clients; set both or neither. All TLS files are
	// read again on every reconnect, so rotated certificates take effect.
	TLSCertFile string
	TLSKeyFile  string
	// Name names the connection in the server's monitoring (default "amends").
	Name string
	// ReconnectWait is the pause between reconnect attempts to one server
	// (default 2s), with jitter added.
	ReconnectWait time.Duration
	// Logger receives disconnects, reconnects and asynchronous errors;
	// nil discards them.
	Logger *slog.Logger
	// Options are applied after the ones Connect derives, for settings it
	// does not cover.
	Options []nats.Option
}

// Connect connects to the server or cluster cfg names. After the first
// connection succeeds the client reconnects forever. It does not retry the
// first connection: a server that cannot be reached at start is an error.
//
// Every file setting is checked before dialling. An unusable setting
// returns an error wrapping ErrInvalidConfig that names the setting and
// the value, such as "credentials file /x: no such file or directory"; a
// file that does not exist also matches fs.ErrNotExist. A failed
// connection returns an error naming the URLs (passwords redacted) and
// wrapping the error of nats.Connect.
func Connect(cfg ClientConfig) (*nats.Conn, error) {
	opts, err := clientOptions(cfg)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s (check the URL and that a server is up and reachable): %w", redactURLs(cfg.URL), err)
	}
	return nc, nil
}

func clientOptions(cfg ClientConfig) ([]nats.Option, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, invalidConfig("NATS URL is empty: give one or more comma-separated server URLs such as nats://host:4222")
	}
	if err := CheckURLs(cfg.URL); err != nil {
		return nil, err
	}
	wait := cfg.ReconnectWait
	if wait <= 0 {
		wait = DefaultReconnectWait
	}
	opts := append([]nats.Option{nats.Name(cmp.Or(cfg.Name, DefaultClientName)), nats.MaxReconnects(-1), nats.ReconnectWait(wait)},
		connHandlers(cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)))...)

	if cfg.CredsFile != "" && cfg.NKeySeedFile != "" {
		return nil, invalidConfig("both a credentials file (%s) and an NKey seed file (%s) are set: a credentials file carries its own seed, set only one",
			cfg.CredsFile, cfg.NKeySeedFile)
	}
	if cfg.CredsFile != "" {
		if err := checkFile("credentials file", cfg.CredsFile); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.NKeySeedFile != "" {
		if err := checkFile("NKey seed file", cfg.NKeySeedFile); err != nil {
			return nil, err
		}
		opt, err := nats.NkeyOptionFromSeed(cfg.NKeySeedFile)
		if err != nil {
			return nil, invalidConfig("NKey seed file %s: %w: it must hold a user seed (SU...)", cfg.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	}

	tlsOpts, err := tlsOptions(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts, tlsOpts...)
	return append(opts, cfg.Options...), nil
}

func tlsOptions(cfg ClientConfig) ([]nats.Option, error) {
	var opts []nats.Option
	if cfg.TLSCAFile != "" {
		if err := checkFile("TLS CA file", cfg.TLSCAFile); err != nil {
			return nil, err
		}
		opt := nats.RootCAs(cfg.TLSCAFile)
		if err := opt(&nats.Options{}); err != nil {
			return nil, invalidConfig("TLS CA file %s: %w: it must hold PEM certificates", cfg.TLSCAFile, err)
		}
		opts = append(opts, opt)
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, invalidConfig("TLS client certificate %q and key %q: set both or neither", cfg.TLSCertFile, cfg.TLSKeyFile)
	}
	if cfg.TLSCertFile != "" {
		if err := checkFile("TLS client certificate file", cfg.TLSCertFile); err != nil {
			return nil, err
		}
		if err := checkFile("TLS client key file", cfg.TLSKeyFile); err != nil {
			return nil, err
		}
		opt := nats.ClientCert(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err := opt(&nats.Options{}); err != nil {
			return nil, invalidConfig("TLS client certificate %s with key %s: %w: they must be a matching PEM certificate and key",
				cfg.TLSCertFile, cfg.TLSKeyFile, err)
		}
		opts = append(opts, opt)
	}
	return opts, nil
}

// checkFile reports a file that cannot be read, naming the setting.
func checkFile(setting, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return invalidConfig("%s %s: %w: check the path and that this process may read it", setting, path, pathErr(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return invalidConfig("%s %s: is a directory, not a file", setting, path)
	}
	return nil
}

// redactURLs returns the comma-separated URLs with any password masked.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			p = u.Redacted()
			if _, hasPass := u.User.Password(); !hasPass {
				// A lone user part may be a token.
				u.User = url.User("xxxxx")
				p = u.String()
			}
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

// natsSchemes are the URL schemes nats.go dials.
var natsSchemes = map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true}

// CheckURLs checks each comma-separated server URL as nats.go reads it (a
// bare host:port means nats://): a nats, tls, ws or wss scheme, a host and
// a port from 1 to 65535 if one is given. The error matches
// ErrInvalidConfig and names the bad URL with its password masked. Connect
// runs it too; call it to check a setting before anything starts.
func CheckURLs(urls string) error {
	for i, raw := range strings.Split(urls, ",") {
		raw = strings.TrimSpace(raw)
		full := raw
		if !strings.Contains(full, "://") {
			full = "nats://" + full
		}
		u, err := url.Parse(full)
		if err != nil {
			return invalidConfig("NATS URL %d of %q is not a URL: give server URLs such as nats://host:4222", i+1, redactURLs(urls))
		}
		shown := redactURLs(raw)
		switch {
		case !natsSchemes[u.Scheme]:
			return invalidConfig("NATS URL %s has the scheme %q: use nats, tls, ws or wss", shown, u.Scheme)
		case u.Hostname() == "":
			return invalidConfig("NATS URL %s has no host: give server URLs such as nats://host:4222", shown)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || !bounds.Within(n, 1, 65535) {
				return invalidConfig("NATS URL %s has the port %s: use 1 to 65535", shown, p)
			}
		}
	}
	return nil
}

// connHandlers log the connection's losses, restorations and asynchronous
// errors to log.
func connHandlers(log *slog.Logger) []nats.Option {
	return []nats.Option{
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() {
				return // closed on purpose, not lost
			}
			log.Warn("NATS connection lost; reconnecting", "url", nc.ConnectedUrlRedacted(), "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS connection restored", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				log.Warn("NATS asynchronous error", "subject", sub.Subject, "err", err)
				return
			}
			log.Warn("NATS asynchronous error", "err", err)
		}),
	}
}
