package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testca"
	"github.com/amends-dev/amends/internal/testlog"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

// FuzzTLSListener sends arbitrary bytes to the API's real listener stack
// (the connection cap with its stall detection, TLS with a reloading
// certificate, the timeouts, the API's handler with tokens): inside a TLS
// connection as a request, or, with raw set, as the first bytes of a
// connection (a broken handshake, plain HTTP to the TLS port). Whatever
// comes, the server must not panic, must not keep more connections than
// its cap, and must still answer a normal request over TLS afterwards.
func FuzzTLSListener(f *testing.F) {
	ca := testca.New(f)
	certFile, keyFile := ca.Issue(f, 1, false).Write(f, f.TempDir(), "server")
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	reloader, err := newCertReloader(tlsFiles{cert: certFile, key: keyFile}, logger)
	require.NoError(f, err)
	reloader.every = 0
	tokens, err := server.ParseTokens("ops:operator:" + strings.Repeat("s", 24))
	require.NoError(f, err)
	_, js := natstest.New(f).Connect()
	store, err := jsstore.New(js)
	require.NoError(f, err)
	views, err := projection.OpenViews(f.Context(), js)
	require.NoError(f, err)
	index, err := projection.NewIndex(views, store)
	require.NoError(f, err)
	ictx, icancel := context.WithCancel(context.Background())
	idone := make(chan struct{})
	go func() { _ = index.Run(ictx); close(idone) }()
	f.Cleanup(func() { icancel(); <-idone })
	api := server.New(server.Config{Queries: index, Commands: aggregate.NewService(store), Tokens: tokens,
		BodyTimeout: 200 * time.Millisecond, ReadYourWrites: -1, Logger: logger})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(f, err)
	hs := newHTTPServer(l, api.Handler(), httpOptions{maxConns: 16, writeTimeout: 2 * time.Second, stallAfter: 100 * time.Millisecond, tls: reloader}, logger)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = hs.run(ctx); close(done) }()
	f.Cleanup(func() { cancel(); <-done })
	addr := l.Addr().String()
	clientTLS := &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}

	for _, s := range []struct {
		data string
		raw  bool
	}{
		{"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", false},
		{"GET /api/v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + strings.Repeat("s", 24) + "\r\n\r\n", false},
		{"POST /api/v1/records/x/prepare_compensation HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n\r\n{", false},
		{"GET / HTTP/1.1\r\nHost: rebind.attacker.example\r\nX-Forwarded-Proto: https\r\n\r\n", false},
		{"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", true},
		{"\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00", true},
		{"\x16\x03\x03\xff\xff", true},
		{"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false},
	} {
		f.Add([]byte(s.data), s.raw)
	}
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		var conn net.Conn = c
		if !raw {
			tc := tls.Client(c, clientTLS)
			_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
			if err := tc.Handshake(); err != nil {
				c.Close()
				t.Fatalf("handshake: %v", err)
			}
			conn = tc
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write(data)
		// End the client's side, so that the server answers what it has
		// and closes instead of waiting for a keep-alive's next request.
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
		conn.Close()

		if log := logs.String(); strings.Contains(log, "panic") {
			i := strings.Index(log, "panic")
			t.Fatalf("the server panicked: %s", log[i:min(len(log), i+600)])
		}
		if n := len(hs.limiter.slots); n > 16 {
			t.Fatalf("%d connections held, over the cap of 16", n)
		}
		// The server still answers over TLS.
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS, DisableKeepAlives: true}}
		resp, err := hc.Get("https://" + addr + "/healthz")
		require.NoError(t, err, "the server answers after %q", data)
		body, _ := io.ReadAll(bufio.NewReader(resp.Body))
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	})
}
