// Package natsembed runs a NATS server with JetStream inside a service's
// process, for a single-binary service that needs nothing else installed.
// It is the server `amends serve` embeds by default.
//
// Start starts the server on a data directory and a TCP client listener
// (127.0.0.1:4222 by default) and returns once it accepts connections.
// Clients in the same process connect over TCP loopback (Server.Connect).
// The server has no authentication: keep it on loopback, or use a NATS
// cluster you run (and nats.Connect) beyond one machine.
//
// A service that talks to a control plane started with `amends serve`
// does not embed a server: it connects to serve's --nats-listen address
// (nats://127.0.0.1:4222 by default) with nats.Connect.
//
// # Durability
//
// By default the file store acknowledges a write before it reaches the
// disk and fsyncs every 2 minutes, so a machine crash (not a process
// crash) can lose the last acknowledged writes. Config.SyncAlways fsyncs
// every write, at a large cost in append rate.
package natsembed

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/amends-dev/amends/internal/natsconn"
)

// Defaults of Config.
const (
	DefaultHost         = natsconn.DefaultHost
	DefaultPort         = natsconn.DefaultPort
	DefaultServerName   = natsconn.DefaultServerName
	DefaultReadyTimeout = natsconn.DefaultReadyTimeout
)

// RandomPort as Config.Port makes the server listen on a free port chosen
// by the operating system; Server.ClientURL reports it.
const RandomPort = natsconn.RandomPort

var (
	// ErrInvalidConfig reports a setting of Config that cannot be used; the
	// error's message names the setting, its value and what is expected.
	ErrInvalidConfig = natsconn.ErrInvalidConfig
	// ErrDataDirLocked reports that another server, in this process or
	// another, runs on the data directory; the message names the directory
	// and, when known, the pid that holds it.
	ErrDataDirLocked = natsconn.ErrDataDirLocked
)

// Config configures an embedded server: the data directory (required),
// the client listener (Host, Port), SyncAlways, MaxPayload, ServerName,
// Logger (the server's warnings and errors; Debug adds its notices and
// debug lines), and ReadyTimeout. Zero values mean the documented
// defaults. It is the configuration amends serve's own embedded server
// takes, so the two cannot drift.
type Config = natsconn.EmbeddedConfig

// Server is a running embedded NATS server with JetStream. Its methods are
// safe for concurrent use.
type Server struct{ e *natsconn.Embedded }

// Start starts a server as cfg describes and returns once it accepts
// client connections. ctx bounds only the start: the server runs until
// Shutdown, which the caller must call. While it runs, the server holds a
// lock on its data directory.
//
// It returns an error matching ErrInvalidConfig for a setting it cannot
// use, one matching ErrDataDirLocked when another server holds the data
// directory, an error quoting the server's message when it does not start
// (the port is in use, the directory cannot be written), or ctx's error.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	e, err := natsconn.StartEmbedded(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Server{e: e}, nil
}

// ClientURL returns the URL clients connect to, such as
// "nats://127.0.0.1:4222", with the actual port for RandomPort.
func (s *Server) ClientURL() string { return s.e.ClientURL() }

// DataDir returns the absolute path of the data directory.
func (s *Server) DataDir() string { return s.e.DataDir() }

// Connect opens a TCP client connection to the server. The caller closes
// (or drains) it before Shutdown. It returns the error of nats.Connect.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) { return s.e.Connect(opts...) }

// Shutdown stops the server, closing its client connections, and returns
// once it has stopped and flushed its store; it then releases the data
// directory. Idempotent.
func (s *Server) Shutdown() { s.e.Shutdown() }
