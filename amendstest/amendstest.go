// Package amendstest starts a real NATS server with JetStream inside a
// test, for the tests of services built on amends: no mocks, no docker,
// nothing to install. Each call starts a fresh server on t.TempDir() that
// listens on no port (clients connect through an in-process pipe) and is
// shut down by the test's cleanup.
//
// ControlPlane runs, in the same test, what `amends serve` runs beside a
// service: the projector, the index and the scheduler, on a clock the test
// moves (Advance) and with scheduler passes only when the test asks (Tick),
// so a test of retries is a few lines and needs no sleep.
package amendstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/natstest"
)

// APITimeout is the timeout of JetStream requests made without a deadline
// on the connections this package opens: generous, so tests hold on a
// busy machine.
const APITimeout = natstest.APITimeout

// JetStream starts a server for tb and returns a JetStream context on a
// connection to it; both end with the test. It fails the test if the
// server does not start within 30 s.
func JetStream(tb testing.TB) jetstream.JetStream {
	tb.Helper()
	return natstest.New(tb).JetStream()
}

// Server is a server started for one test.
type Server struct{ s *natstest.Server }

// NewServer starts a server for tb, shut down by the test's cleanup, for
// tests that need several connections or a restart.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	return &Server{s: natstest.New(tb)}
}

// Connect opens another connection, closed by the test's cleanup, and a
// JetStream context on it.
func (s *Server) Connect() (*nats.Conn, jetstream.JetStream) { return s.s.Connect() }

// Restart shuts the server down and starts a new one on the same store
// directory, keeping the streams; connections to the old server are
// closed, so connect again.
func (s *Server) Restart() { s.s = s.s.Restart() }
