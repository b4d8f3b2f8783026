package natsconn_test

import (
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/internal/testlog"
)

func TestConnectToEmbeddedServer(t *testing.T) {
	e := startEmbedded(t, natsconn.EmbeddedConfig{})
	nc, err := natsconn.Connect(natsconn.ClientConfig{URL: e.ClientURL(), Name: "probe"})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	assert.True(t, nc.IsConnected())
	assert.Equal(t, "probe", nc.Opts.Name)
	assert.Equal(t, -1, nc.Opts.MaxReconnect, "the client must reconnect forever")
	assert.Equal(t, natsconn.DefaultReconnectWait, nc.Opts.ReconnectWait)
}

func TestConnectMissingCredsFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.creds")
	_, err := natsconn.Connect(natsconn.ClientConfig{URL: "nats://127.0.0.1:4222", CredsFile: missing})
	require.ErrorIs(t, err, natsconn.ErrInvalidConfig)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "credentials file "+missing+": no such file or directory")
}

func TestConnectInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a key or certificate"), 0o600))
	tf := writeTLSFiles(t)
	const url = "nats://127.0.0.1:4222"

	for _, tc := range []struct {
		name string
		cfg  natsconn.ClientConfig
		want string
	}{
		{"no URL", natsconn.ClientConfig{URL: " "}, "NATS URL is empty"},
		{"port out of range", natsconn.ClientConfig{URL: "nats://127.0.0.1:99999"}, "NATS URL nats://127.0.0.1:99999 has the port 99999: use 1 to 65535"},
		{"second URL bad", natsconn.ClientConfig{URL: "nats://a:4222, http://b:4222"}, `NATS URL http://b:4222 has the scheme "http": use nats, tls, ws or wss`},
		{"no host", natsconn.ClientConfig{URL: "nats://:4222"}, "NATS URL nats://:4222 has no host"},
		{"not a URL", natsconn.ClientConfig{URL: "nats://u:s3cret@a:4222,nats://%zz"}, `NATS URL 2 of "nats://u:xxxxx@a:4222,nats://%zz" is not a URL`},
		{"password masked", natsconn.ClientConfig{URL: "nats://u:s3cret@a:0"}, "NATS URL nats://u:xxxxx@a:0 has the port 0"},
		{"creds and nkey", natsconn.ClientConfig{URL: url, CredsFile: garbage, NKeySeedFile: garbage}, "set only one"},
		{"creds is a directory", natsconn.ClientConfig{URL: url, CredsFile: dir}, "credentials file " + dir + ": is a directory"},
		{"missing nkey", natsconn.ClientConfig{URL: url, NKeySeedFile: filepath.Join(dir, "x.nk")}, "NKey seed file " + filepath.Join(dir, "x.nk") + ": no such file"},
		{"bad nkey", natsconn.ClientConfig{URL: url, NKeySeedFile: garbage}, "NKey seed file " + garbage + ":"},
		{"missing CA", natsconn.ClientConfig{URL: url, TLSCAFile: filepath.Join(dir, "ca.pem")}, "TLS CA file " + filepath.Join(dir, "ca.pem") + ": no such file"},
		{"bad CA", natsconn.ClientConfig{URL: url, TLSCAFile: garbage}, "TLS CA file " + garbage + ":"},
		{"cert without key", natsconn.ClientConfig{URL: url, TLSCertFile: tf.ClientCert}, "set both or neither"},
		{"key without cert", natsconn.ClientConfig{URL: url, TLSKeyFile: tf.ClientKey}, "set both or neither"},
		{"missing key", natsconn.ClientConfig{URL: url, TLSCertFile: tf.ClientCert, TLSKeyFile: filepath.Join(dir, "k.pem")}, "TLS client key file " + filepath.Join(dir, "k.pem") + ": no such file"},
		{"mismatched key", natsconn.ClientConfig{URL: url, TLSCertFile: tf.ClientCert, TLSKeyFile: tf.ServerKey}, "TLS client certificate " + tf.ClientCert + " with key " + tf.ServerKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := natsconn.Connect(tc.cfg)
			require.ErrorIs(t, err, natsconn.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "natsconn", "the sentinel's package-prefixed text must not reach users")
			assert.NotContains(t, err.Error(), "s3cret", "never the password")
		})
	}
}

func TestConnectUnreachableRedactsPassword(t *testing.T) {
	// A port that was just free: a stopped embedded server's.
	e, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: t.TempDir(), Port: natsconn.RandomPort})
	require.NoError(t, err)
	e.Shutdown()
	withPass := strings.Replace(e.ClientURL(), "nats://", "nats://amends:s3cret@", 1)

	_, err = natsconn.Connect(natsconn.ClientConfig{URL: withPass})
	require.Error(t, err)
	assert.NotErrorIs(t, err, natsconn.ErrInvalidConfig)
	assert.ErrorContains(t, err, "connect to NATS at nats://amends:xxxxx@127.0.0.1:")
	assert.NotContains(t, err.Error(), "s3cret", "the error must not leak the password")
}

func TestConnectWithTLSClientCertificate(t *testing.T) {
	tf := writeTLSFiles(t)
	s := startTLSServer(t, tf)

	nc, err := natsconn.Connect(natsconn.ClientConfig{URL: s.ClientURL(), TLSCAFile: tf.CA, TLSCertFile: tf.ClientCert, TLSKeyFile: tf.ClientKey})
	require.NoError(t, err, "connect with the CA and a client certificate")
	t.Cleanup(nc.Close)
	require.NoError(t, nc.Publish("x", []byte("over tls")))
	require.NoError(t, nc.Flush())

	_, err = natsconn.Connect(natsconn.ClientConfig{URL: s.ClientURL(), TLSCAFile: tf.CA})
	assert.Error(t, err, "a server that verifies clients must refuse a client without a certificate")
}

func TestConnectWithNKeySeedFile(t *testing.T) {
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := user.PublicKey()
	require.NoError(t, err)
	seed, err := user.Seed()
	require.NoError(t, err)
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	require.NoError(t, os.WriteFile(seedFile, seed, 0o600))
	s := startServer(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})

	nc, err := natsconn.Connect(natsconn.ClientConfig{URL: s.ClientURL(), NKeySeedFile: seedFile})
	require.NoError(t, err, "connect with the user's seed")
	nc.Close()

	_, err = natsconn.Connect(natsconn.ClientConfig{URL: s.ClientURL()})
	assert.ErrorIs(t, err, nats.ErrAuthorization, "the server must refuse a client without the key")
}

func TestConnectReconnectsAfterServerRestart(t *testing.T) {
	dir := t.TempDir()
	e, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: dir, Port: natsconn.RandomPort})
	require.NoError(t, err)
	var logs testlog.Buffer
	nc, err := natsconn.Connect(natsconn.ClientConfig{URL: e.ClientURL(), ReconnectWait: 20 * time.Millisecond, Logger: logs.Logger(slog.LevelDebug)})
	require.NoError(t, err)
	t.Cleanup(nc.Close)

	port := e.Server().Addr().(*net.TCPAddr).Port
	e.Shutdown()
	require.Eventually(t, func() bool { return !nc.IsConnected() }, 10*time.Second, 5*time.Millisecond, "client must notice the server left")
	startEmbedded(t, natsconn.EmbeddedConfig{DataDir: dir, Port: port})
	require.Eventually(t, nc.IsConnected, 10*time.Second, 5*time.Millisecond, "client must reconnect to the restarted server")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "NATS connection restored") }, 10*time.Second, 5*time.Millisecond)
	assert.Contains(t, logs.String(), "NATS connection lost")
}
