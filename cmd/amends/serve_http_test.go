package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
)

// startHTTP serves h through newHTTPServer on a loopback port until the
// test ends.
func startHTTP(t *testing.T, h http.Handler, maxConns int, writeTimeout time.Duration) *httpServer {
	t.Helper()
	return startHTTPWith(t, h, httpOptions{maxConns: maxConns, writeTimeout: writeTimeout})
}

// startHTTPWith is startHTTP with every option.
func startHTTPWith(t *testing.T, h http.Handler, o httpOptions) *httpServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := newHTTPServer(l, h, o, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		recv(t, done, "HTTP server stop")
	})
	return s
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })

// slowStream writes two lines with a pause of three write timeouts
// between them: a batch that streams for longer than the write timeout.
func slowStream(d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range 2 {
			if i > 0 {
				select {
				case <-time.After(3 * d): // the handler is slow on purpose
				case <-r.Context().Done():
					return
				}
			}
			_, _ = io.WriteString(w, `{"line":`+string(rune('1'+i))+"}\n")
			w.(http.Flusher).Flush()
		}
	})
}

func TestWriteTimeoutDoesNotCutAStream(t *testing.T) {
	const d = 500 * time.Millisecond
	s := startHTTP(t, slowStream(d), 8, d)
	resp, err := http.Get(s.url)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err, "a stream that writes within each write timeout must not be cut")
	assert.Equal(t, "{\"line\":1}\n{\"line\":2}\n", string(body))

	// The control: the server's WriteTimeout alone cuts the same stream.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	plain := &http.Server{Handler: slowStream(d), WriteTimeout: d}
	go func() { _ = plain.Serve(l) }()
	t.Cleanup(func() { plain.Close() })
	resp, err = http.Get("http://" + l.Addr().String())
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotContains(t, string(body), `{"line":2}`, "without per-write deadlines WriteTimeout cuts the stream")
}

// idleConn sends one request on a raw keep-alive connection and reads its
// response, leaving the connection idle.
func idleConn(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	r := bufio.NewReader(c)
	request(t, c, r)
	return c, r
}

func request(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// closed reports whether the server closed c.
func closed(t *testing.T, r *bufio.Reader) bool {
	t.Helper()
	_, err := r.ReadByte()
	return err == io.EOF
}

func TestConnectionCapClosesTheLongestIdleForANewClient(t *testing.T) {
	s := startHTTP(t, okHandler, 2, time.Minute)
	idle := func(n int) func() bool {
		return func() bool {
			s.limiter.mu.Lock()
			defer s.limiter.mu.Unlock()
			return len(s.limiter.idle) == n
		}
	}
	// The server marks a connection idle after it wrote the response, so
	// r1 must be idle before r2's request: else, on a busy machine, r2 may
	// go idle first and be the longest idle.
	_, r1 := idleConn(t, s.url)
	require.Eventually(t, idle(1), waitLimit, 5*time.Millisecond, "the first connection goes idle")
	_, r2 := idleConn(t, s.url)
	require.Eventually(t, idle(2), waitLimit, 5*time.Millisecond, "both connections go idle")

	hc := &http.Client{Transport: &http.Transport{}, Timeout: waitLimit}
	resp, err := hc.Get(s.url)
	require.NoError(t, err, "a new client is served at the cap")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, closed(t, r1), "the longest-idle connection makes room")
	assert.LessOrEqual(t, len(s.limiter.slots), 2, "never more than the cap")
	_ = r2
}

func TestConnectionCapQueuesWhileEveryConnectionIsBusy(t *testing.T) {
	s := startHTTPWith(t, okHandler, httpOptions{maxConns: 1, writeTimeout: time.Minute, stallAfter: 2 * waitLimit})
	// A connection that has sent nothing yet is not idle: it holds the
	// only slot (until it has stalled for stallAfter, here longer than the
	// test).
	busy, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	require.NoError(t, busy.SetDeadline(time.Now().Add(waitLimit)))
	require.Eventually(t, func() bool { return len(s.limiter.slots) == 1 }, waitLimit, 5*time.Millisecond)

	got := make(chan int, 1)
	go func() {
		hc := &http.Client{Transport: &http.Transport{}, Timeout: waitLimit}
		resp, err := hc.Get(s.url)
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	require.Eventually(t, s.limiter.waitingForSlot, waitLimit, 5*time.Millisecond, "the second connection waits for a slot")
	select {
	case code := <-got:
		t.Fatalf("a connection beyond the cap was served (%d) while the only slot was busy", code)
	default:
	}

	// The busy connection's request is served; once it idles, it makes room.
	br := bufio.NewReader(busy)
	request(t, busy, br)
	assert.Equal(t, http.StatusOK, recv(t, got, "the queued request"))
	assert.True(t, closed(t, br))
}

func TestServeCapsHTTPConnections(t *testing.T) {
	var c cli
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--http-max-connections", "2")
	for range 2 {
		c, err := net.Dial("tcp", strings.TrimPrefix(r.info.HTTPURL, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
	}
	hc := &http.Client{Transport: &http.Transport{}, Timeout: waitLimit}
	resp, err := hc.Get(r.info.HTTPURL + "/healthz")
	require.NoError(t, err, "a normal request is served while idle connections fill the cap")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, exitOK, r.stop(t))
	assert.Contains(t, c.stderr.String(), "http_max_connections=2")
	assert.Contains(t, c.stderr.String(), `msg="open-file limit"`)
}

func TestServeConnectionCapWithinTheFileLimit(t *testing.T) {
	lim := raiseFileLimit()
	if !lim.known || lim.soft/2 >= maxHTTPConnections {
		t.Skip("no finite open-file limit below the flag's range")
	}
	var c cli
	code := c.run(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0",
		"--http-max-connections", "1048576")
	assert.Equal(t, exitUsage, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "--http-max-connections 1048576 is over half the open-file limit of")

	n, err := httpConnCap(0, fileLimits{soft: 1024, hard: 4096, known: true})
	require.NoError(t, err)
	assert.Equal(t, 512, n, "half of a 1024 limit")
	n, err = httpConnCap(0, fileLimits{soft: 1 << 20, known: true})
	require.NoError(t, err)
	assert.Equal(t, defaultMaxHTTPConns, n)
}

func TestWriteProbeIsCachedForASecond(t *testing.T) {
	_, js := natstest.New(t).Connect()
	kv, err := openHealth(t.Context(), js, 0, 1)
	require.NoError(t, err)
	clock := fakeclock.At(t0)
	p := newWriteProbe(kv, clock.Now)
	rev := func() uint64 {
		e, err := kv.Get(t.Context(), p.key)
		require.NoError(t, err)
		return e.Revision()
	}

	require.NoError(t, p.check(t.Context()))
	first := rev()
	clock.SetMillis(t0 + 999)
	require.NoError(t, p.check(t.Context()))
	assert.Equal(t, first, rev(), "within a second the last result is reused")
	clock.SetMillis(t0 + 1000)
	require.NoError(t, p.check(t.Context()))
	assert.Greater(t, rev(), first, "after a second it writes again")
	clock.SetMillis(t0)
	require.NoError(t, p.check(t.Context()))
	assert.Greater(t, rev(), first+1, "a clock that went back probes again")
}

// The deadlines docs/security.md states: headers within 10 s, a whole
// request within 30 s, each write of a response 60 s (moved forward
// before every write: TestWriteTimeoutDoesNotCutAStream), idle
// keep-alives 60 s.
func TestServeHTTPDeadlines(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	s := newHTTPServer(l, http.NotFoundHandler(), httpOptions{maxConns: 8, writeTimeout: httpWriteTimeout}, slog.New(slog.DiscardHandler))
	assert.Equal(t, 10*time.Second, s.hs.ReadHeaderTimeout)
	assert.Equal(t, 30*time.Second, s.hs.ReadTimeout)
	assert.Equal(t, 60*time.Second, s.hs.WriteTimeout)
	assert.Equal(t, 60*time.Second, s.hs.IdleTimeout)
}
