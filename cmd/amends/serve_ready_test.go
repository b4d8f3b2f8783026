package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
)

// readyz returns /readyz's status and message.
func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Message string }
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e.Message
}

// TestReadyzChecksThatJetStreamAcceptsWrites fills the JetStream store of
// the NATS server serve uses: /readyz must say not ready although NATS is
// connected and the index loaded, and ready again once there is room.
func TestReadyzChecksThatJetStreamAcceptsWrites(t *testing.T) {
	const maxStore = 4 << 20
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(), JetStreamMaxStore: maxStore,
	})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(waitLimit))
	t.Cleanup(ns.Shutdown)

	var c cli
	r := c.startServe(t, "serve", "--nats-url", ns.ClientURL(), "--scheduler=false")
	require.Eventually(t, func() bool {
		code, _ := readyz(t, r.info.HTTPURL)
		return code == http.StatusOK
	}, waitLimit, 10*time.Millisecond, "ready once the index is loaded and a write went through")

	js := connectJS(t, ns.ClientURL())
	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}})
	require.NoError(t, err)
	chunk := make([]byte, 256<<10)
	for i := 0; ; i++ {
		require.Less(t, i, 2*maxStore/len(chunk), "the store never filled up")
		if _, err := js.Publish(t.Context(), "fill", chunk); err != nil {
			break // JetStream refuses writes now
		}
	}
	require.Eventually(t, func() bool {
		code, _ := readyz(t, r.info.HTTPURL)
		return code == http.StatusServiceUnavailable
	}, waitLimit, 10*time.Millisecond, "not ready while JetStream refuses writes")
	_, msg := readyz(t, r.info.HTTPURL)
	assert.Contains(t, msg, "JetStream does not accept writes (a put to the KV bucket amends_health failed")

	require.NoError(t, js.DeleteStream(t.Context(), "FILL"))
	require.Eventually(t, func() bool {
		code, _ := readyz(t, r.info.HTTPURL)
		return code == http.StatusOK
	}, waitLimit, 10*time.Millisecond, "ready again once writes are accepted")
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
}

// TestReadyzNeedsACurrentIndex: not ready before the index has loaded the
// views, ready while its watch runs, not ready once it stopped; the reason
// carries no package prefix.
func TestReadyzNeedsACurrentIndex(t *testing.T) {
	js := natstest.New(t).JetStream()
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	ix, err := projection.NewIndex(views, nil)
	require.NoError(t, err)
	check := indexCurrent(ix)

	err = check(t.Context())
	require.Error(t, err, "an index that has not loaded is not ready")
	assert.Contains(t, err.Error(), "not loaded the views bucket yet")
	assert.NotContains(t, err.Error(), "projection:")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	require.Eventually(t, func() bool { return check(t.Context()) == nil }, waitLimit, 10*time.Millisecond,
		"ready once the watch has loaded the bucket")
	cancel()
	require.NoError(t, <-done)
	assert.Error(t, check(t.Context()), "an index that stopped watching is not ready")
}
