package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemoShowsRecordsReachingSucceeded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for a few seconds")
	}
	var c cli
	code := c.run(t, "demo", "--exit", "--http", "127.0.0.1:0", "--orders", "2", "--timeout", "60s")
	out := c.stdout.String()
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, c.stderr.String())
	assert.Equal(t, 2, strings.Count(out, "FAILED     Greylisted, retry 0 of 5"), "a record per order:\n%s", out)
	assert.Equal(t, 2, strings.Count(out, "FAILED     Greylisted, retry 1 of 5"), "the first replay fails:\n%s", out)
	assert.Equal(t, 2, strings.Count(out, "SUCCEEDED  after 2 scheduled replays"), "the second replay succeeds:\n%s", out)
	assert.Contains(t, out, "the mail server took 10 sends for 2 mails")
	assert.Contains(t, out, "the inventory projector ran once per order (2 calls)")
	assert.Contains(t, out, "go run ./cmd/amends history <ID> --server http://127.0.0.1:")
}

func TestDemoAgainstARunningServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for a few seconds")
	}
	var s cli
	r := s.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1",
		"--scheduler-period", "1s", "--scheduler-initial-delay", "0s")
	var c cli
	code := c.run(t, "demo", "--exit", "--nats-url", r.info.NATSURL, "--server", r.info.HTTPURL, "--orders", "1", "--timeout", "60s")
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", c.stdout.String(), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "SUCCEEDED  after 2 scheduled replays")

	list := cli{env: map[string]string{"AMENDS_SERVER": r.info.HTTPURL}}
	require.Equal(t, exitOK, list.run(t, "list", "--view", "succeeded"))
	assert.Contains(t, list.stdout.String(), "Mailer.confirmOrder@orders")
}
