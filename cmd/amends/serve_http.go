package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts of the HTTP server.
const (
	// httpReadHeaderTimeout bounds how long a client may take to send a
	// request's headers.
	httpReadHeaderTimeout = 10 * time.Second
	// httpReadTimeout bounds how long a client may take to send a whole
	// request, headers and body: the backstop behind the API's own body
	// deadline (server.DefaultBodyTimeout, a 408) and the connection cap's
	// closing of stalled connections.
	httpReadTimeout = 30 * time.Second
	// httpIdleTimeout closes a keep-alive connection idle this long.
	httpIdleTimeout = 60 * time.Second
	// httpWriteTimeout bounds each write of a response (not the whole
	// response: a streamed batch may run for minutes), so a client that
	// stops reading cannot hold a connection forever.
	httpWriteTimeout = 60 * time.Second
)

// httpServer is the API's server on its listener, with its timeouts, its
// connection cap, its write deadlines and, with TLS, its reloading
// certificate.
type httpServer struct {
	hs      *http.Server
	limiter *connLimiter
	l       net.Listener
	url     string
	logger  *slog.Logger
}

// httpOptions configure newHTTPServer.
type httpOptions struct {
	// maxConns caps the open connections (see connLimiter).
	maxConns int
	// writeTimeout bounds each write of a response.
	writeTimeout time.Duration
	// stallAfter is how long a connection may keep the server waiting
	// for its client before the cap may close it (0: defaultStallAfter).
	stallAfter time.Duration
	// tls, if set, serves HTTPS with its certificate (reloaded when its
	// files change) and, with client CAs, requires client certificates.
	tls *certReloader
}

// newHTTPServer serves h on l with at most o.maxConns connections (see
// connLimiter), a per-write deadline of o.writeTimeout and, with o.tls,
// over TLS (HTTP/1.1: ConnState then tracks every request).
func newHTTPServer(l net.Listener, h http.Handler, o httpOptions, logger *slog.Logger) *httpServer {
	limiter := newConnLimiter(o.maxConns, o.stallAfter)
	hs := &http.Server{
		Handler:           limiter.Handler(writeDeadlines(h, o.writeTimeout)),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       httpIdleTimeout,
		// The server sets this deadline when it has read a request;
		// writeDeadlines moves it forward before every write.
		WriteTimeout: o.writeTimeout,
		ConnState:    limiter.ConnState,
		ConnContext:  limiter.ConnContext,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ll := limiter.Listen(l)
	scheme := "http://"
	if o.tls != nil {
		ll = tls.NewListener(ll, o.tls.config())
		scheme = "https://"
	}
	return &httpServer{hs: hs, limiter: limiter, l: ll, url: scheme + l.Addr().String(), logger: logger}
}

// run serves until ctx ends, then shuts down, draining in-flight requests
// for up to shutdownTimeout.
func (s *httpServer) run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.hs.Serve(s.l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := s.hs.Shutdown(sctx) // drains in-flight requests
	<-errc
	return err
}

// writeDeadlines gives every write of a response a fresh deadline of d
// from now, through http.ResponseController. The server's WriteTimeout
// alone would cut a response d after its request was read, however
// steadily it streams; this way d bounds only how long one write may
// block on a client that does not read.
func writeDeadlines(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}, r)
	})
}

// deadlineWriter moves the write deadline forward before each write and
// flush. It keeps http.Flusher (the batch stream flushes every line) and
// unwraps for http.ResponseController.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// FlushError flushes, as http.ResponseController.Flush calls it.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
