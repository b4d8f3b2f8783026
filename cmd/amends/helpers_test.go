package main

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testlog"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 30 * time.Second

// cli is one in-process run of the command line.
type cli struct {
	stdout, stderr testlog.Buffer
	env            map[string]string
}

func (c *cli) app() *app {
	return &app{
		stdout: &c.stdout,
		stderr: &c.stderr,
		lookupEnv: func(k string) (string, bool) {
			v, ok := c.env[k]
			return v, ok
		},
		now: func() time.Time { return time.UnixMilli(t0) },
	}
}

// run runs args to completion and returns the exit code.
func (c *cli) run(tb testing.TB, args ...string) int {
	tb.Helper()
	return execute(tb.Context(), c.app(), args)
}

// running is a serve started in the background by startServe.
type running struct {
	info   serveInfo
	cancel context.CancelFunc
	code   chan int
}

// startServe runs args (a serve command line) in-process and waits until
// serve is ready. The test's cleanup stops it if the test did not.
func (c *cli) startServe(tb testing.TB, args ...string) *running {
	tb.Helper()
	return c.startServeWithin(tb, waitLimit, args...)
}

// startServeWithin is startServe waiting up to limit for serve to be
// ready: a start against a cluster whose leaders step down provisions
// every bucket through the elections, which on a loaded 2-core machine
// takes longer than waitLimit.
func (c *cli) startServeWithin(tb testing.TB, limit time.Duration, args ...string) *running {
	tb.Helper()
	if !slices.Contains(args, "--http") {
		args = append(args, "--http", "127.0.0.1:0") // tests run in parallel
	}
	ctx, cancel := context.WithCancel(tb.Context())
	ready := make(chan serveInfo, 1)
	a := c.app()
	a.serveReady = func(i serveInfo) { ready <- i }
	r := &running{cancel: cancel, code: make(chan int, 1)}
	go func() { r.code <- execute(ctx, a, args) }()
	tb.Cleanup(func() {
		cancel()
		<-r.code
	})
	select {
	case r.info = <-ready:
		return r
	case code := <-r.code:
		r.code <- code
		tb.Fatalf("serve exited with code %d before it was ready; stderr:\n%s", code, c.stderr.String())
	case <-time.After(limit):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		tb.Fatalf("serve not ready within %s; stderr:\n%s\ngoroutines:\n%s", limit, c.stderr.String(), buf)
	}
	return nil
}

// stop cancels serve's context and returns its exit code.
func (r *running) stop(tb testing.TB) int {
	tb.Helper()
	r.cancel()
	select {
	case code := <-r.code:
		r.code <- code // for the cleanup
		return code
	case <-time.After(waitLimit):
		tb.Fatalf("serve did not stop within %s of its context ending", waitLimit)
		return -1
	}
}

// connectJS opens a TCP connection to url, closed by the test's cleanup,
// and a JetStream context on it.
func connectJS(tb testing.TB, url string) jetstream.JetStream {
	tb.Helper()
	nc, err := nats.Connect(url)
	require.NoError(tb, err, "connect to %s", url)
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(tb, err)
	return js
}

// waitForStream polls until the stream exists and returns its info.
func waitForStream(tb testing.TB, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	tb.Helper()
	var info *jetstream.StreamInfo
	require.Eventually(tb, func() bool {
		st, err := js.Stream(tb.Context(), name)
		if err != nil {
			return false
		}
		info = st.CachedInfo()
		return true
	}, waitLimit, 10*time.Millisecond, "stream %s never appeared", name)
	return info
}

// recv receives from ch, failing the test after waitLimit.
func recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		tb.Fatalf("no %s within %s", what, waitLimit)
		var zero T
		return zero
	}
}
