package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/notify"
)

func TestServeNotifiesAndExposesMetrics(t *testing.T) {
	var mu sync.Mutex
	var bodies []notify.Body
	var signed []bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b notify.Body
		_ = json.Unmarshal(raw, &b)
		mu.Lock()
		bodies = append(bodies, b)
		signed = append(signed, checkSignature(notifySecret, r, raw))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	url := "http://localhost:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port) + "/hook"

	c := cli{env: map[string]string{"HOOK_SECRET": notifySecret}}
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--scheduler=false",
		"--notify-url", url, "--notify-secret-env", "HOOK_SECRET", "--notify-allow-host", "localhost", "--notify-public-url", "https://amends.example.com")
	js := connectJS(t, r.info.NATSURL)
	store, err := jsstore.New(js)
	require.NoError(t, err)
	svc := aggregate.NewService(store)
	require.Eventually(t, func() bool {
		_, err := js.Consumer(t.Context(), r.info.Stream, notify.DefaultDurable)
		return err == nil
	}, waitLimit, 10*time.Millisecond, "the notifier's consumer never appeared")

	f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "orders", ProcessorName: "billing", Name: "charge"}
	id := aggregate.RecordID("evt-1", f)
	_, err = svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Boom", ErrorMsg: "declined"}, ExecuteAt: time.Now().UnixMilli(),
	}, aggregate.Meta{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(bodies) == 1 }, waitLimit, 10*time.Millisecond, "serve delivers the notification")
	mu.Lock()
	assert.True(t, signed[0])
	assert.Equal(t, "created", bodies[0].Type)
	assert.Equal(t, "https://amends.example.com/record?id="+id, bodies[0].Link)
	mu.Unlock()

	// The endpoint has the body before the notifier has its answer and
	// counts the delivery: poll the metrics.
	delivered := func() bool {
		resp, err := http.Get(r.info.HTTPURL + "/metrics")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics := string(b)
		return strings.Contains(metrics, `amends_notify_deliveries_total{endpoint="default",outcome="delivered"} 1`) &&
			strings.Contains(metrics, "amends_notify_lag_seconds_count 1")
	}
	require.Eventually(t, delivered, waitLimit, 10*time.Millisecond, "the delivery and its lag are counted")
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
	assert.NotContains(t, c.stderr.String(), notifySecret, "a secret is never logged")
	assert.Contains(t, c.stderr.String(), "notifications on")
}

func TestServeRefusesBadNotifyFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"secret without url": {[]string{"--notify-secret-env", "X"}, "--notify-secret-env configures the --notify-url endpoint: set --notify-url too"},
		"config and url":     {[]string{"--notify-config", "x.json", "--notify-url", "https://a.example.com"}, "use one of them"},
		"url without secret": {[]string{"--notify-url", "https://a.example.com"}, "--notify-url needs its secret"},
		"unset secret":       {[]string{"--notify-url", "https://a.example.com", "--notify-secret-env", "NOPE"}, "--notify-secret-env: the variable NOPE is not set"},
		"bad scheme":         {[]string{"--notify-url", "gopher://a.example.com", "--notify-secret-env", "HOOK_SECRET"}, `--notify-url: scheme "gopher"`},
		"bad format":         {[]string{"--notify-url", "https://a.example.com", "--notify-secret-env", "HOOK_SECRET", "--notify-format", "xml"}, `--notify-format: "xml" is not json or slack`},
		"bad window":         {[]string{"--notify-url", "https://a.example.com", "--notify-secret-env", "HOOK_SECRET", "--notify-dedup-window", "48h"}, "--notify-dedup-window: 48h0m0s is outside 0s to 24h0m0s"},
		"missing config":     {[]string{"--notify-config", "/nonexistent/notify.json"}, "--notify-config: cannot open /nonexistent/notify.json"},
		"allow host alone":   {[]string{"--notify-allow-host", "localhost"}, "need --notify-config or --notify-url"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cli{env: map[string]string{"HOOK_SECRET": notifySecret}}
			code := c.run(t, append([]string{"serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0"}, tc.args...)...)
			assert.Equal(t, exitUsage, code, "stderr: %s", c.stderr.String())
			assert.Contains(t, c.stderr.String(), tc.want)
			assert.NotContains(t, c.stderr.String(), "invalid notification config", "no sentinel text")
			assert.False(t, strings.Contains(c.stderr.String(), notifySecret))
		})
	}
}
