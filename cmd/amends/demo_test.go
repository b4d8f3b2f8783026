package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoSecret is a viewer token's secret in these tests.
const demoSecret = "0123456789abcdef0123456789abcdef"

// historyLine finds the record id of the printed history command.
var historyLine = regexp.MustCompile(`go run \./cmd/amends history ([0-9a-f-]{36})`)

// TestDemoShowsRecordsReachingSucceeded runs 55 orders, more than one page
// of the API's default 50, and stops it with a Ctrl-C (its context) once
// every record succeeded: a clean stop that logs no warning.
func TestDemoShowsRecordsReachingSucceeded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for a few seconds")
	}
	var c cli
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- execute(ctx, c.app(), []string{"demo", "--http", "127.0.0.1:0", "--orders", "55"}) }()
	require.Eventually(t, func() bool {
		select {
		case got := <-code:
			code <- got
			return true // fails below
		default:
		}
		return strings.Contains(c.stdout.String(), "Ctrl-C to stop.")
	}, 2*time.Minute, 20*time.Millisecond, "every record must succeed; stdout:\n%s\nstderr:\n%s", &c.stdout, &c.stderr)
	cancel()
	require.Equal(t, exitOK, recv(t, code, "exit code"), "stdout:\n%s\nstderr:\n%s", c.stdout.String(), c.stderr.String())

	out := c.stdout.String()
	assert.Regexp(t, `NATS nats://127\.0\.0\.1:\d+: for natscli,  nats --server nats://127\.0\.0\.1:\d+ stream ls`, out)
	assert.Regexp(t, `Dashboard http://127\.0\.0\.1:\d+/ in a browser`, out, "the demo names the dashboard")
	assert.Equal(t, 55, strings.Count(out, "FAILED     Greylisted, retry 0 of 5"), "a record per order:\n%s", out)
	assert.Equal(t, 55, strings.Count(out, "FAILED     Greylisted, retry 1 of 5"), "the first replay fails:\n%s", out)
	assert.Equal(t, 55, strings.Count(out, "SUCCEEDED  after 2 scheduled replays"), "the second replay succeeds:\n%s", out)
	assert.Regexp(t, `order demo-[0-9a-f]{8}-55  record [0-9a-f-]{36}  Mailer\.confirmOrder  SUCCEEDED`, out, "steps name the record id beside the order id")
	assert.Contains(t, out, "the mail server took 275 sends for 55 mails")
	assert.Contains(t, out, "the inventory projector ran once per order (55 calls)")
	assert.Regexp(t, historyLine.String()+` --server http://127\.0\.0\.1:`, out, "history is shown with a real record id")

	for _, line := range strings.Split(c.stderr.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			assert.Contains(t, line, "the HTTP API has no tokens", "a clean stop logs no other warning")
		}
	}
	assert.NotContains(t, c.stderr.String(), "err=<nil>")
}

func TestDemoAgainstARunningServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for a few seconds")
	}
	var s cli
	r := s.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1",
		"--scheduler-period", "1s", "--scheduler-initial-delay", "0s", "--tokens", "watcher:viewer:"+demoSecret)

	t.Run("without a token it says why it cannot watch", func(t *testing.T) {
		var c cli
		code := c.run(t, "demo", "--exit", "--nats-url", r.info.NATSURL, "--server", r.info.HTTPURL, "--orders", "1", "--timeout", "60s")
		assert.Equal(t, exitUnauthenticated, code, "stdout:\n%s", c.stdout.String())
		assert.Contains(t, c.stderr.String(), "the API at "+r.info.HTTPURL+" refused to list the records (401 Unauthorized)")
		assert.Contains(t, c.stderr.String(), "give a viewer token with --token or AMENDS_TOKEN")
	})

	t.Run("with a token", func(t *testing.T) {
		c := cli{env: map[string]string{"AMENDS_TOKEN": demoSecret}}
		code := c.run(t, "demo", "--exit", "--nats-url", r.info.NATSURL, "--server", r.info.HTTPURL, "--orders", "1", "--timeout", "60s")
		out := c.stdout.String()
		require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, c.stderr.String())
		assert.Contains(t, out, "SUCCEEDED  after 2 scheduled replays")
		assert.Contains(t, out, "NATS "+r.info.NATSURL)

		m := historyLine.FindStringSubmatch(out)
		require.NotNil(t, m, "the demo prints a history command with a record id:\n%s", out)
		history := cli{env: map[string]string{"AMENDS_SERVER": r.info.HTTPURL, "AMENDS_TOKEN": demoSecret}}
		require.Equal(t, exitOK, history.run(t, "history", m[1]), "the printed id is one history takes: %s", history.stderr.String())

		list := cli{env: map[string]string{"AMENDS_SERVER": r.info.HTTPURL, "AMENDS_TOKEN": demoSecret}}
		require.Equal(t, exitOK, list.run(t, "list", "--view", "succeeded"), list.stderr.String())
		assert.Contains(t, list.stdout.String(), "Mailer.confirmOrder@orders")
	})
}

func TestDemoPrintsWhyItCannotList(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for a few seconds")
	}
	var s cli
	r := s.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1")
	var c cli
	// Port 1 on loopback refuses connections.
	code := c.run(t, "demo", "--exit", "--nats-url", r.info.NATSURL, "--server", "http://127.0.0.1:1", "--orders", "1", "--timeout", "2s")
	assert.Equal(t, exitFailure, code)
	stderr := c.stderr.String()
	assert.Equal(t, 1, strings.Count(stderr, "amends demo: cannot list the records at http://127.0.0.1:1 (retrying)"),
		"each distinct failure is printed once:\n%s", stderr)
	assert.Contains(t, stderr, "connection refused")
	assert.Contains(t, stderr, "the records did not all succeed within 2s")
}

func TestDemoRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--orders", "0"}, "--orders must be between 1 and 100, got 0"},
		{[]string{"--timeout", "0s"}, "--timeout must be between 1s and 24h, got 0s"},
		{[]string{"--http", ":99999"}, `--http ":99999": want host:port`},
		{[]string{"--http", "0.0.0.0:8080"}, "--http 0.0.0.0:8080 is not a loopback address: the demo's API has no tokens"},
		{[]string{"--nats-url", "nats://127.0.0.1:1", "--server", "ftp://x"}, `--server: server address "ftp://x" must be an http or https URL`},
		{[]string{"--nats-url", "nats://127.0.0.1:0"}, "--nats-url: NATS URL nats://127.0.0.1:0 has the port 0: use 1 to 65535"},
	} {
		var c cli
		code := c.run(t, append([]string{"demo"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v: stderr:\n%s", tc.args, c.stderr.String())
		assert.Contains(t, c.stderr.String(), tc.want, tc.args)
	}
}
