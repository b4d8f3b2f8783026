// Package silent is a test server that accepts TCP connections and never
// answers, for tests of clients' timeouts.
package silent

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Server listens on a loopback port, accepts every connection and never
// reads or writes; it returns the base URL ("http://127.0.0.1:PORT"). The
// test's cleanup closes the listener and every connection.
func Server(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	tb.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}
