package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/internal/natstest"
)

func TestServeEmbeddedProvisionsStreamAndStops(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var c cli
	r := c.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1")

	assert.True(t, strings.HasPrefix(r.info.NATSURL, "nats://127.0.0.1:"), "client URL %q", r.info.NATSURL)
	assert.NotContains(t, r.info.NATSURL, ":-1")
	info := waitForStream(t, connectJS(t, r.info.NATSURL), "AMENDS_compensation")
	assert.Equal(t, jetstream.FileStorage, info.Config.Storage)
	assert.Equal(t, 1, info.Config.Replicas)
	assert.DirExists(t, filepath.Join(dir, "jetstream"), "the embedded server must store its data in --data-dir")

	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
	logs := c.stderr.String()
	assert.Contains(t, logs, "nats_url="+r.info.NATSURL)
	assert.Contains(t, logs, "stream=AMENDS_compensation")
	assert.Contains(t, logs, "embedded NATS server stopped")
	assert.Contains(t, logs, `msg="amends stopped"`)
}

func TestServeRestartKeepsStream(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		var c cli
		r := c.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:0")
		waitForStream(t, connectJS(t, r.info.NATSURL), r.info.Stream)
		require.Equal(t, exitOK, r.stop(t), "run %d; stderr:\n%s", i+1, c.stderr.String())
	}
}

func TestServeHonoursEnvironment(t *testing.T) {
	dir := t.TempDir()
	c := cli{env: map[string]string{
		"AMENDS_DATA_DIR":    dir,
		"AMENDS_NATS_LISTEN": "127.0.0.1:0",
		"AMENDS_STORAGE":     "memory",
		"AMENDS_LOG_LEVEL":   "warn",
	}}
	r := c.startServe(t, "serve")

	info := waitForStream(t, connectJS(t, r.info.NATSURL), "AMENDS_compensation")
	assert.Equal(t, jetstream.MemoryStorage, info.Config.Storage, "AMENDS_STORAGE must set --storage")
	assert.DirExists(t, filepath.Join(dir, "jetstream"), "AMENDS_DATA_DIR must set --data-dir")
	require.Equal(t, exitOK, r.stop(t))
	assert.NotContains(t, c.stderr.String(), "level=INFO", "AMENDS_LOG_LEVEL=warn must hide info lines")
}

func TestServeFlagWinsOverEnvironment(t *testing.T) {
	c := cli{env: map[string]string{"AMENDS_STORAGE": "bogus", "AMENDS_REPLICAS": "7"}}
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--storage", "memory", "--replicas", "1")
	info := waitForStream(t, connectJS(t, r.info.NATSURL), r.info.Stream)
	assert.Equal(t, jetstream.MemoryStorage, info.Config.Storage)
	assert.Equal(t, 1, info.Config.Replicas)
}

func TestServeExternalServer(t *testing.T) {
	ext, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: t.TempDir(), Port: natsconn.RandomPort})
	require.NoError(t, err)
	t.Cleanup(ext.Shutdown)

	var c cli
	r := c.startServe(t, "serve", "--nats-url", ext.ClientURL())
	assert.Equal(t, ext.ClientURL(), r.info.NATSURL)
	js := connectJS(t, ext.ClientURL())
	waitForStream(t, js, "AMENDS_compensation")
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())

	assert.NotContains(t, c.stderr.String(), "embedded NATS server")
	assert.NotContains(t, c.stderr.String(), "NATS connection lost", "a deliberate close is not a lost connection")
	_, err = js.Stream(t.Context(), "AMENDS_compensation")
	assert.NoError(t, err, "stopping serve must leave an external server running")
}

func TestServeClusterWithThreeReplicas(t *testing.T) {
	cluster := natstest.NewCluster(t, 3)
	// The meta leader can exist before it knows every peer; an R3 stream
	// cannot be placed until it does.
	require.Eventually(t, func() bool {
		for _, s := range cluster.Servers {
			if len(s.JetStreamClusterPeers()) == 3 {
				return true
			}
		}
		return false
	}, waitLimit, 10*time.Millisecond, "the meta leader never saw all 3 peers")
	var c cli
	r := c.startServe(t, "serve", "--nats-url", cluster.URLs(), "--replicas", "3")
	_, js := cluster.Connect()
	info := waitForStream(t, js, "AMENDS_compensation")
	assert.Equal(t, 3, info.Config.Replicas)
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
}

func TestServeFailures(t *testing.T) {
	ext, err := natsconn.StartEmbedded(t.Context(), natsconn.EmbeddedConfig{DataDir: t.TempDir(), Port: natsconn.RandomPort})
	require.NoError(t, err)
	t.Cleanup(ext.Shutdown)
	listen := strings.TrimPrefix(ext.ClientURL(), "nats://")
	plain, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	plain.Start()
	require.True(t, plain.ReadyForConnections(waitLimit))
	t.Cleanup(plain.Shutdown)
	missing := filepath.Join(t.TempDir(), "missing.creds")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"port in use", []string{"serve", "--data-dir", t.TempDir(), "--nats-listen", listen}, exitFailure, "address already in use"},
		{"message size over max_payload", []string{"serve", "--nats-url", ext.ClientURL(), "--max-msg-size", "2000000"}, exitFailure,
			"--max-msg-size 2000000 exceeds the NATS server's max_payload of 1048576 bytes"},
		{"server without JetStream", []string{"serve", "--nats-url", plain.ClientURL()}, exitFailure,
			"provision the event store stream AMENDS_compensation (storage file, replicas 1) on NATS at " + plain.ClientURL() +
				" (no JetStream answered: enable JetStream on the servers and for the account)"},
		{"missing credentials", []string{"serve", "--nats-url", ext.ClientURL(), "--nats-creds", missing}, exitUsage,
			"credentials file " + missing + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cli
			code := c.run(t, tc.args...)
			assert.Equal(t, tc.code, code, "stderr:\n%s", c.stderr.String())
			assert.Contains(t, c.stderr.String(), tc.want)
		})
	}
}

func TestServeDataDirNotWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	var c cli
	code := c.run(t, "serve", "--data-dir", filepath.Join(file, "sub"), "--nats-listen", "127.0.0.1:-1")
	assert.Equal(t, exitUsage, code, "stderr:\n%s", c.stderr.String())
	assert.Contains(t, c.stderr.String(), "data directory "+filepath.Join(file, "sub"))
}

func TestServeListensOnLocalhost(t *testing.T) {
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "localhost:0")
	connectJS(t, r.info.NATSURL)
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
	assert.NotContains(t, c.stderr.String(), "no authentication", "loopback needs no warning")
}

func TestServeRunsTheControlPlane(t *testing.T) {
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--scheduler-period", "1s")
	require.NotEmpty(t, r.info.HTTPURL)
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.info.HTTPURL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, waitLimit, 10*time.Millisecond, "/readyz answers 200 once the index is loaded")

	list := cli{env: map[string]string{"AMENDS_SERVER": r.info.HTTPURL}}
	require.Equal(t, exitOK, list.run(t, "list"), list.stderr.String())
	assert.Contains(t, list.stdout.String(), "no records match")

	resp, err := http.Get(r.info.HTTPURL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`amends_records{recoverable="UNKNOWN",status="FAILED"} 0`, "amends_scheduler_backlog 0", "amends_projector_streams_total", `amends_compensation_events_total{event="execution_success_applied"} 0`, "amends_http_request_duration_seconds"} {
		assert.Contains(t, string(body), m)
	}
	assert.Contains(t, c.stderr.String(), "the HTTP API has no tokens", "serve says that local use is open")
}

func TestServeRefusesAnOpenAPIBeyondLoopback(t *testing.T) {
	var c cli
	code := c.run(t, "serve", "--data-dir", t.TempDir(), "--http", "0.0.0.0:0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, c.stderr.String(), "0.0.0.0:0 is not a loopback address and no tokens are configured")
}

func TestServeConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "amends.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("# test\nscheduler-batch: 0\n"), 0o600))
	c := cli{env: map[string]string{}}
	assert.Equal(t, exitUsage, c.run(t, "serve", "--config", cfg))
	assert.Contains(t, c.stderr.String(), "--scheduler-batch must be between 1 and 10000, got 0", "the file's value was applied")

	c = cli{env: map[string]string{"AMENDS_SCHEDULER_BATCH": "5"}}
	require.NoError(t, os.WriteFile(cfg, []byte("scheduler-batch: 0\nstorage: disk\n"), 0o600))
	assert.Equal(t, exitUsage, c.run(t, "serve", "--config", cfg))
	assert.Contains(t, c.stderr.String(), `--storage must be file or memory, got "disk"`, "the variable wins over the file, the file sets the rest")

	require.NoError(t, os.WriteFile(cfg, []byte("colour: blue\n"), 0o600))
	c = cli{}
	assert.Equal(t, exitUsage, c.run(t, "serve", "--config", cfg))
	assert.Contains(t, c.stderr.String(), `amends.yaml:1: unknown setting "colour"`)
}
