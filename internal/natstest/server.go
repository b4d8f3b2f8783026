package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readyTimeout bounds how long a test waits for a server to accept clients.
const readyTimeout = 30 * time.Second

// Server is one in-process NATS server with JetStream, owned by a test.
type Server struct {
	// Server is the running nats-server.
	*server.Server
	// StoreDir is the JetStream store directory; Restart reuses it.
	StoreDir string

	tb     testing.TB
	listen bool
}

// New starts a JetStream server that does not listen on any port and
// registers its shutdown with tb.Cleanup. It fails the test if the server
// does not become ready.
func New(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, tb.TempDir(), false)
}

// NewListening is New listening on a free loopback port (ClientURL), for
// tests whose child processes connect to it (the kill -9 loops).
func NewListening(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, tb.TempDir(), true)
}

func start(tb testing.TB, dir string, listen bool) *Server {
	tb.Helper()
	opts := &server.Options{
		ServerName: "natstest",
		JetStream:  true,
		StoreDir:   dir,
		DontListen: !listen,
		NoLog:      true,
		NoSigs:     true,
	}
	if listen {
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	}
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("natstest: new server: %v", err)
	}
	s.Start()
	if !s.ReadyForConnections(readyTimeout) {
		s.Shutdown()
		tb.Fatalf("natstest: server not ready within %s", readyTimeout)
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return &Server{Server: s, StoreDir: dir, tb: tb, listen: listen}
}

// Connect opens an in-process client connection, closed by the test's
// cleanup, and a JetStream context on it whose requests without a deadline
// time out after APITimeout (the client's default of 5 s does not hold
// when a busy machine runs tests in parallel).
func (s *Server) Connect() (*nats.Conn, jetstream.JetStream) {
	s.tb.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s.Server), nats.Name(s.tb.Name()))
	if err != nil {
		s.tb.Fatalf("natstest: connect: %v", err)
	}
	s.tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(APITimeout))
	if err != nil {
		s.tb.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// JetStream is Connect without the connection.
func (s *Server) JetStream() jetstream.JetStream {
	s.tb.Helper()
	_, js := s.Connect()
	return js
}

// Restart shuts the server down and starts a new one on the same store
// directory. Connections to the old server are closed; connect again.
func (s *Server) Restart() *Server {
	s.tb.Helper()
	s.Shutdown()
	s.WaitForShutdown()
	return start(s.tb, s.StoreDir, s.listen)
}
