package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Defaults of EmbeddedConfig.
const (
	DefaultHost         = "127.0.0.1"
	DefaultPort         = 4222
	DefaultServerName   = "amends"
	DefaultReadyTimeout = 10 * time.Second
)

// RandomPort as EmbeddedConfig.Port makes the server listen on a free port
// chosen by the operating system; Embedded.ClientURL reports it.
const RandomPort = -1

// EmbeddedConfig configures an embedded server. Zero values mean the
// documented defaults.
type EmbeddedConfig struct {
	// DataDir is the directory JetStream stores its data in (under
	// DataDir/jetstream). It is created if missing. Required.
	DataDir string
	// Host is the address the client listener binds (default 127.0.0.1).
	// Bind 0.0.0.0 only on a trusted network: the server has no
	// authentication.
	Host string
	// Port is the client port (default 4222; RandomPort for a free one).
	Port int
	// SyncAlways makes the file store fsync every write before it is
	// acknowledged. Without it writes are fsynced every 2 minutes, and a
	// machine crash can lose the last acknowledged writes; with it appends
	// slow down to a few thousand per second. See the package doc.
	SyncAlways bool
	// MaxPayload is the largest message the server accepts, headers
	// included (default 1 MiB, the nats-server default).
	MaxPayload int32
	// ServerName names the server in logs and monitoring (default "amends").
	ServerName string
	// Logger receives the server's log lines; nil discards them.
	Logger *slog.Logger
	// Debug logs the server's notices (at Info) and debug lines (at Debug)
	// too. By default only its warnings and errors reach Logger.
	Debug bool
	// ReadyTimeout bounds how long StartEmbedded waits for the server to
	// accept connections when ctx has no earlier deadline (default 10s).
	ReadyTimeout time.Duration
}

// Embedded is a running embedded nats-server with JetStream. Its methods are
// safe for concurrent use.
type Embedded struct {
	srv       *server.Server
	clientURL string
	dataDir   string
	lock      *dirLock
	once      sync.Once
}

// StartEmbedded starts a nats-server with JetStream as cfg describes and
// returns once it accepts client connections. ctx bounds only the start:
// the server runs until Shutdown, which the caller must call.
//
// While it runs, the Embedded holds an exclusive lock on the data directory
// (the file LockFileName in it, holding the pid): a second StartEmbedded on
// the same directory, in this process or another, returns an error matching
// ErrDataDirLocked that names the directory and the holder's pid. Shutdown
// releases the lock; the kernel releases it when the process ends.
//
// It returns an error wrapping ErrInvalidConfig for a setting it cannot use
// (an empty DataDir, a port out of range), and an error quoting the
// server's own message when the server does not start (the port is in use,
// the data directory cannot be written, JetStream fails to recover its
// data), or ctx's error.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	opts, err := serverOptions(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.StoreDir, 0o750); err != nil {
		return nil, invalidConfig("data directory %s: %w: choose a directory this process can create and write",
			opts.StoreDir, pathErr(err))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start embedded NATS server: %w", err)
	}
	lock, err := lockDataDir(opts.StoreDir)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		lock.unlock()
		return nil, fmt.Errorf("start embedded NATS server: %w", err)
	}
	logger := newSlogLogger(cfg.Logger, cfg.Debug)
	srv.SetLogger(logger, cfg.Debug, false)

	listen := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	fail := func(reason string) (*Embedded, error) {
		srv.Shutdown()
		srv.WaitForShutdown()
		lock.unlock()
		return nil, fmt.Errorf("start embedded NATS server on %s with data in %s: %s", listen, opts.StoreDir, reason)
	}
	// Start synchronously: it binds the listener and enables JetStream
	// before it returns, reporting failures through Fatalf.
	srv.Start()
	if msg := logger.firstFatal(); msg != "" {
		if srv.Addr() == nil {
			return fail(msg + ": stop whatever holds the port or choose another (RandomPort picks a free one)")
		}
		return fail(msg)
	}
	if !srv.ReadyForConnections(readyTimeout(ctx, cfg.ReadyTimeout)) {
		if err := ctx.Err(); err != nil {
			return fail(err.Error())
		}
		return fail("not ready for connections in time")
	}
	return &Embedded{srv: srv, clientURL: clientURL(opts.Host, srv.Addr()), dataDir: opts.StoreDir, lock: lock}, nil
}

func serverOptions(cfg EmbeddedConfig) (*server.Options, error) {
	if cfg.DataDir == "" {
		return nil, invalidConfig("data directory is empty: set the directory JetStream stores its data in")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, invalidConfig("data directory %s: %w", cfg.DataDir, err)
	}
	host := cfg.Host
	if host == "" {
		host = DefaultHost
	}
	port := cfg.Port
	switch {
	case port == 0:
		port = DefaultPort
	case !bounds.Within(port, RandomPort, 65535):
		return nil, invalidConfig("port %d is out of range: use 1-65535, or %d for a free port", port, RandomPort)
	}
	if cfg.MaxPayload < 0 {
		return nil, invalidConfig("max payload %d is negative: use 0 for the default of 1 MiB or a size in bytes", cfg.MaxPayload)
	}
	name := cfg.ServerName
	if name == "" {
		name = DefaultServerName
	}
	return &server.Options{
		ServerName: name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		SyncAlways: cfg.SyncAlways,
		MaxPayload: cfg.MaxPayload,
		NoSigs:     true,
	}, nil
}

func readyTimeout(ctx context.Context, d time.Duration) time.Duration {
	if d <= 0 {
		d = DefaultReadyTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return d
}

// clientURL is the URL a local client dials: the bound port, on loopback
// when the server listens on every interface.
func clientURL(host string, addr net.Addr) string {
	port := addr.(*net.TCPAddr).Port
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// pathErr drops the operation and path a *fs.PathError repeats, leaving
// the reason ("permission denied").
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ClientURL returns the URL clients connect to, such as
// "nats://127.0.0.1:4222", with the actual port when the server was
// started on RandomPort.
func (e *Embedded) ClientURL() string { return e.clientURL }

// DataDir returns the absolute path of the data directory.
func (e *Embedded) DataDir() string { return e.dataDir }

// Server returns the running nats-server, for monitoring and tests.
func (e *Embedded) Server() *server.Server { return e.srv }

// Connect opens a TCP client connection to the server, named "amends"
// unless opts name it. The caller closes (or drains) it before Shutdown.
// It returns the error of nats.Connect.
func (e *Embedded) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name(DefaultServerName)}, opts...)
	nc, err := nats.Connect(e.clientURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to embedded NATS server at %s: %w", e.clientURL, err)
	}
	return nc, nil
}

// Shutdown stops the server, closing its client connections, and returns
// once it has stopped and flushed its store, then releases the lock of the
// data directory. It is idempotent; concurrent callers all return after the
// server has stopped.
func (e *Embedded) Shutdown() {
	e.once.Do(func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		e.lock.unlock()
	})
}
