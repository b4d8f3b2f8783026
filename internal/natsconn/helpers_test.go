package natsconn_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natsconn"
)

// startEmbedded starts an embedded server on a random port and, unless cfg
// names one, a fresh data directory. The test's cleanup shuts it down.
func startEmbedded(tb testing.TB, cfg natsconn.EmbeddedConfig) *natsconn.Embedded {
	tb.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = tb.TempDir()
	}
	if cfg.Port == 0 {
		cfg.Port = natsconn.RandomPort
	}
	e, err := natsconn.StartEmbedded(tb.Context(), cfg)
	require.NoError(tb, err, "start embedded server")
	tb.Cleanup(e.Shutdown)
	return e
}

// connectJS opens a TCP connection to e, closed by the test's cleanup, and
// a JetStream context on it.
func connectJS(tb testing.TB, e *natsconn.Embedded, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := e.Connect(opts...)
	require.NoError(tb, err, "connect to %s", e.ClientURL())
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(tb, err)
	return nc, js
}
