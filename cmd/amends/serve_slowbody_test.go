package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/server"
)

// slowBodies keeps n connections sending a command with a 60 000-byte
// body one byte every `every`, reconnecting each one the server closes,
// until the test ends. It returns how many connections it opened.
func slowBodies(t *testing.T, addr string, n int, every time.Duration) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	opened := 0
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					continue
				}
				mu.Lock()
				opened++
				mu.Unlock()
				_, err = fmt.Fprintf(c, "POST /api/v1/records/x/mark_recoverable HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{")
				for err == nil {
					select {
					case <-ctx.Done():
						err = ctx.Err()
					case <-time.After(every):
						_, err = c.Write([]byte(" "))
					}
				}
				c.Close()
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return opened
	}
}

// The attack of the review: more connections than the cap, each sending a
// body a byte every 4 s, used to fill --http-max-connections, and /readyz
// did not answer while they lasted. Now a connection that keeps the server
// waiting for its client is closed for a new client once it has stalled,
// so the probe is answered while the attack goes on; the body deadline
// (here longer than the test) is not what frees the slots.
func TestSlowBodiesDoNotStarveTheConnectionCap(t *testing.T) {
	const maxConns, attackers = 8, 24
	api := server.New(server.Config{BodyTimeout: time.Minute, ReadYourWrites: -1})
	s := startHTTPWith(t, api.Handler(), httpOptions{maxConns: maxConns, writeTimeout: time.Minute, stallAfter: 300 * time.Millisecond})
	opened := slowBodies(t, strings.TrimPrefix(s.url, "http://"), attackers, 4*time.Second)
	require.Eventually(t, func() bool { return len(s.limiter.slots) == maxConns && opened() >= maxConns },
		waitLimit, 10*time.Millisecond, "the attackers fill the cap")

	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 40 * time.Second}
	var worst time.Duration
	for range 5 {
		start := time.Now()
		resp, err := hc.Get(s.url + "/readyz")
		require.NoError(t, err, "/readyz is answered during the attack")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		worst = max(worst, time.Since(start))
	}
	t.Logf("with %d slow-body attackers on a cap of %d: /readyz answered 5 times, the slowest in %s; %d connections closed for stalling, %d opened",
		attackers, maxConns, worst, s.limiter.stalled.Load(), opened())
	assert.Positive(t, s.limiter.stalled.Load(), "stalled connections made room")
	assert.LessOrEqual(t, len(s.limiter.slots), maxConns, "never more than the cap")
}

// A connection whose request the server is working on is never closed for
// a new client, however long it takes: only a client that keeps the
// server waiting is.
func TestConnectionCapNeverClosesAConnectionBeingServed(t *testing.T) {
	release := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-release
		_, _ = io.WriteString(w, "done\n")
	})
	s := startHTTPWith(t, slow, httpOptions{maxConns: 1, writeTimeout: time.Minute, stallAfter: 50 * time.Millisecond})
	done := make(chan string, 1)
	go func() {
		resp, err := http.Post(s.url, "text/plain", strings.NewReader("a small body"))
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	require.Eventually(t, func() bool { return len(s.limiter.slots) == 1 }, waitLimit, 5*time.Millisecond)
	second := make(chan error, 1)
	go func() {
		hc := &http.Client{Transport: &http.Transport{}, Timeout: waitLimit}
		resp, err := hc.Get(s.url)
		if err == nil {
			resp.Body.Close()
		}
		second <- err
	}()
	require.Eventually(t, s.limiter.waitingForSlot, waitLimit, 5*time.Millisecond)
	// Well past stallAfter, the served request still holds its slot.
	select {
	case got := <-done:
		t.Fatalf("the request being served was cut: %q", got)
	case <-time.After(500 * time.Millisecond): // long against stallAfter on purpose
	}
	assert.Zero(t, s.limiter.stalled.Load())
	close(release)
	assert.Equal(t, "done\n", recv(t, done, "the slow request"))
	require.NoError(t, recv(t, second, "the queued request"))
}
