package main

import (
	"context"
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
	// httpIdleTimeout closes a keep-alive connection idle this long.
	httpIdleTimeout = 60 * time.Second
	// httpWriteTimeout bounds each write of a response (not the whole
	// response: a streamed batch may run for minutes), so a client that
	// stops reading cannot hold a connection forever.
	httpWriteTimeout = 60 * time.Second
)

// httpServer is the API's server on its listener, with its timeouts, its
// connection cap and its write deadlines.
type httpServer struct {
	hs      *http.Server
	limiter *connLimiter
	l       net.Listener
	url     string
	logger  *slog.Logger
}

// newHTTPServer serves h on l with at most maxConns connections (see
// connLimiter) and a per-write deadline of writeTimeout.
func newHTTPServer(l net.Listener, h http.Handler, maxConns int, writeTimeout time.Duration, logger *slog.Logger) *httpServer {
	limiter := newConnLimiter(maxConns)
	hs := &http.Server{
		Handler:           writeDeadlines(h, writeTimeout),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		// The server sets this deadline when it has read a request;
		// writeDeadlines moves it forward before every write.
		WriteTimeout: writeTimeout,
		ConnState:    limiter.ConnState,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return &httpServer{hs: hs, limiter: limiter, l: limiter.Listen(l), url: "http://" + l.Addr().String(), logger: logger}
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
