package natsconn_test

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/internal/testlog"
)

func TestStartEmbeddedServesJetStreamOverTCP(t *testing.T) {
	e := startEmbedded(t, natsconn.EmbeddedConfig{})

	u, err := url.Parse(e.ClientURL())
	require.NoError(t, err, "client URL %q", e.ClientURL())
	assert.Equal(t, "nats", u.Scheme)
	assert.Equal(t, "127.0.0.1", u.Hostname())
	assert.NotEqual(t, "-1", u.Port(), "client URL must carry the port actually bound")

	nc, js := connectJS(t, e)
	assert.Equal(t, e.ClientURL(), nc.ConnectedUrl(), "the helper must connect over TCP to the client URL")

	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	require.NoError(t, err)
	ack, err := js.Publish(t.Context(), "t.1", []byte("hello"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), ack.Sequence)
}

func TestStartEmbeddedRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	e, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: dir, Port: natsconn.RandomPort})
	require.NoError(t, err)
	nc, js := connectJS(t, e)
	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	require.NoError(t, err)
	for _, body := range []string{"a", "b", "c"} {
		_, err = js.Publish(t.Context(), "t.x", []byte(body))
		require.NoError(t, err)
	}
	nc.Close()
	e.Shutdown()

	e2 := startEmbedded(t, natsconn.EmbeddedConfig{DataDir: dir})
	_, js2 := connectJS(t, e2)
	st, err := js2.Stream(t.Context(), "T")
	require.NoError(t, err, "the stream must survive a restart on the same data directory")
	assert.Equal(t, uint64(3), st.CachedInfo().State.Msgs)
	msg, err := st.GetMsg(t.Context(), 3)
	require.NoError(t, err)
	assert.Equal(t, "c", string(msg.Data))
	assert.Equal(t, dir, e2.DataDir())
}

func TestStartEmbeddedPortInUse(t *testing.T) {
	first := startEmbedded(t, natsconn.EmbeddedConfig{})
	u, err := url.Parse(first.ClientURL())
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)

	_, err = natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: t.TempDir(), Port: port})
	require.Error(t, err, "a second server on port %d must not start", port)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Contains(t, err.Error(), "choose another", "the error must say what to do")
	assert.Contains(t, err.Error(), u.Host, "the error must name the address")
}

func TestStartEmbeddedOptions(t *testing.T) {
	e := startEmbedded(t, natsconn.EmbeddedConfig{SyncAlways: true, MaxPayload: 2 << 20, ServerName: "syncy"})
	assert.True(t, e.Server().JetStreamConfig().SyncAlways, "SyncAlways must reach JetStream")
	assert.Equal(t, "syncy", e.Server().Name())
	nc, js := connectJS(t, e)
	assert.Equal(t, int64(2<<20), nc.MaxPayload())

	_, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}})
	require.NoError(t, err)
	_, err = js.Publish(t.Context(), "t", make([]byte, 3<<19))
	require.NoError(t, err, "a 1.5 MiB message fits a 2 MiB max payload")
}

func TestStartEmbeddedListensOnAllInterfaces(t *testing.T) {
	e := startEmbedded(t, natsconn.EmbeddedConfig{Host: "0.0.0.0"})
	assert.True(t, strings.HasPrefix(e.ClientURL(), "nats://127.0.0.1:"),
		"a client URL for 0.0.0.0 must dial loopback, got %s", e.ClientURL())
	connectJS(t, e)
}

func TestStartEmbeddedInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  natsconn.EmbeddedConfig
		want string
	}{
		{"no data dir", natsconn.EmbeddedConfig{}, "data directory is empty"},
		{"port too large", natsconn.EmbeddedConfig{DataDir: "x", Port: 70000}, "port 70000 is out of range"},
		{"port negative", natsconn.EmbeddedConfig{DataDir: "x", Port: -2}, "port -2 is out of range"},
		{"negative max payload", natsconn.EmbeddedConfig{DataDir: "x", Port: -1, MaxPayload: -1}, "max payload -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := natsconn.StartEmbedded(t.Context(), tc.cfg)
			require.ErrorIs(t, err, natsconn.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "natsconn", "the sentinel's package-prefixed text must not reach users")
		})
	}
}

func TestStartEmbeddedCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := natsconn.StartEmbedded(ctx, natsconn.EmbeddedConfig{DataDir: t.TempDir(), Port: natsconn.RandomPort})
	require.ErrorIs(t, err, context.Canceled)
}

func TestEmbeddedShutdownIsIdempotent(t *testing.T) {
	e, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: t.TempDir(), Port: natsconn.RandomPort})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(e.Shutdown)
	}
	wg.Wait()
	e.Shutdown()
	assert.False(t, e.Server().Running(), "the server must have stopped when Shutdown returns")
	_, err = e.Connect()
	assert.Error(t, err, "connecting to a stopped server must fail")
}

func TestStartEmbeddedLogsQuietlyByDefault(t *testing.T) {
	var quiet, debug testlog.Buffer
	startEmbedded(t, natsconn.EmbeddedConfig{Logger: quiet.Logger(slog.LevelDebug)})
	startEmbedded(t, natsconn.EmbeddedConfig{Logger: debug.Logger(slog.LevelDebug), Debug: true})

	assert.NotContains(t, quiet.String(), "Starting nats-server", "notices must be dropped by default")
	assert.Contains(t, debug.String(), "Starting nats-server", "Debug must log notices")
	assert.Contains(t, debug.String(), "level=INFO")
}

func TestStartEmbeddedLocksTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: dir, Port: natsconn.RandomPort})
	require.NoError(t, err)
	t.Cleanup(first.Shutdown)
	pid := strconv.Itoa(os.Getpid())
	b, err := os.ReadFile(filepath.Join(dir, natsconn.LockFileName))
	require.NoError(t, err)
	assert.Equal(t, pid+"\n", string(b), "the lock file holds the pid of its holder")

	_, err = natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: dir, Port: natsconn.RandomPort})
	require.ErrorIs(t, err, natsconn.ErrDataDirLocked, "a second server on one data directory must not start")
	assert.NotErrorIs(t, err, natsconn.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "data directory "+dir+" is in use by process "+pid+" (this one)")
	assert.Contains(t, err.Error(), "stop that process or choose another data directory")
	assert.NotContains(t, err.Error(), "natsconn")
	assert.True(t, first.Server().Running(), "the refused start must leave the first server running")

	first.Shutdown()
	second := startEmbedded(t, natsconn.EmbeddedConfig{DataDir: dir})
	_, js := connectJS(t, second)
	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}})
	require.NoError(t, err, "after Shutdown the directory is free again")
}
