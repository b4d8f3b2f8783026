package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// defaultStallAfter is how long a connection may keep the server waiting
// for its client (a request's headers or body not arriving) before the
// connection cap may close it for a new client.
const defaultStallAfter = 2 * time.Second

// connLimiter caps the connections an HTTP server holds open, so that a
// flood of clients cannot take the file descriptors the NATS server and
// its store need. Its listener accepts a connection beyond the cap only to
// hold it unserved until a slot frees. To free one it closes, first, the
// connection that has been idle (a keep-alive between requests) the
// longest, then the one that has kept the server waiting longest for its
// client: a connection whose request headers or body have not moved for
// stallAfter (slowloris, a body sent a byte at a time). A connection the
// server is working on (its request read, its response being made or
// streamed) is never closed. When every connection is busy, the new one
// waits (and later ones wait in the kernel's backlog) until one ends or
// stalls. At most max+1 descriptors are in use.
//
// Set ConnState as the http.Server's ConnState hook, ConnContext as its
// ConnContext, and wrap its handler with Handler: that is how the limiter
// learns which connections are idle and which are waiting for a body.
// Safe for concurrent use.
type connLimiter struct {
	max        int
	stallAfter time.Duration
	slots      chan struct{}
	// freed is signalled when a connection becomes idle or closes.
	freed chan struct{}
	done  chan struct{}
	once  sync.Once

	mu    sync.Mutex
	idle  map[*limitedConn]time.Time // idle since
	conns map[*limitedConn]struct{}  // every open connection
	// waiting is 1 while an accepted connection waits for a slot (tests).
	waiting int
	// stalled counts the connections closed for stalling (tests, logs).
	stalled atomic.Int64
}

func newConnLimiter(max int, stallAfter time.Duration) *connLimiter {
	if stallAfter <= 0 {
		stallAfter = defaultStallAfter
	}
	return &connLimiter{
		max: max, stallAfter: stallAfter, slots: make(chan struct{}, max), freed: make(chan struct{}, 1), done: make(chan struct{}),
		idle: map[*limitedConn]time.Time{}, conns: map[*limitedConn]struct{}{},
	}
}

// Listen wraps l; closing the returned listener closes l.
func (c *connLimiter) Listen(l net.Listener) net.Listener { return &limitedListener{Listener: l, c: c} }

// The phases of a connection, as the limiter sees them.
const (
	// phaseWaiting: the server waits for a request (its headers).
	phaseWaiting int32 = iota
	// phaseBody: the request's headers are read; its body may still be
	// coming.
	phaseBody
	// phaseServing: the request is read; the server works on it.
	phaseServing
)

// limitedOf finds the limitedConn under nc (a TLS connection wraps it).
func limitedOf(nc net.Conn) (*limitedConn, bool) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	lc, ok := nc.(*limitedConn)
	return lc, ok
}

// ConnState is the http.Server hook that tracks idle connections and the
// start of each request.
func (c *connLimiter) ConnState(nc net.Conn, state http.ConnState) {
	lc, ok := limitedOf(nc)
	if !ok {
		return
	}
	switch state {
	case http.StateActive:
		lc.setPhase(phaseBody)
	case http.StateIdle, http.StateNew:
		lc.setPhase(phaseWaiting)
	}
	c.mu.Lock()
	if state == http.StateIdle {
		c.idle[lc] = time.Now()
	} else {
		delete(c.idle, lc)
	}
	c.mu.Unlock()
	if state == http.StateIdle || state == http.StateClosed || state == http.StateHijacked {
		c.signal()
	}
}

type connKey struct{}

// ConnContext is the http.Server hook that lets Handler find a request's
// connection.
func (c *connLimiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if lc, ok := limitedOf(nc); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// Handler tells the limiter when a request's body has been read (or the
// handler is done with it): from then on the connection is the server's
// work, not a client keeping it waiting.
func (c *connLimiter) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, ok := r.Context().Value(connKey{}).(*limitedConn)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			lc.setPhase(phaseServing)
		} else {
			r.Body = &bodyWatch{ReadCloser: r.Body, lc: lc}
		}
		defer lc.setPhase(phaseServing)
		h.ServeHTTP(w, r)
	})
}

// bodyWatch moves its connection to phaseServing once the body is read to
// its end (or fails).
type bodyWatch struct {
	io.ReadCloser
	lc *limitedConn
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.lc.setPhase(phaseServing)
	}
	return n, err
}

func (c *connLimiter) signal() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// evict closes the connection idle the longest or, if none is idle, the
// one stalled the longest, and reports whether it closed one. If none can
// be closed, it returns how long until the first may stall.
func (c *connLimiter) evict(now time.Time) (bool, time.Duration) {
	c.mu.Lock()
	var victim *limitedConn
	var since time.Time
	for lc, t := range c.idle {
		if victim == nil || t.Before(since) {
			victim, since = lc, t
		}
	}
	next := c.stallAfter
	stalled := false
	if victim == nil {
		for lc := range c.conns {
			waitingSince, waiting := lc.waitingSince()
			if !waiting {
				continue
			}
			if d := c.stallAfter - now.Sub(waitingSince); d > 0 {
				next = min(next, d)
				continue
			}
			if victim == nil || waitingSince.Before(since) {
				victim, since, stalled = lc, waitingSince, true
			}
		}
	}
	delete(c.idle, victim)
	c.mu.Unlock()
	if victim == nil {
		return false, next
	}
	if stalled {
		c.stalled.Add(1)
	}
	_ = victim.Close()
	return true, 0
}

// waitingForSlot reports whether an accepted connection waits for a slot.
func (c *connLimiter) waitingForSlot() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting > 0
}

type limitedListener struct {
	net.Listener
	c *connLimiter
}

// Accept returns the next connection once it has a slot. It returns an
// error once the listener is closed.
func (l *limitedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := l.c
	for {
		select {
		case c.slots <- struct{}{}:
			c.setWaiting(0)
			return c.track(nc), nil
		default:
		}
		c.setWaiting(1)
		closed, next := c.evict(time.Now())
		if closed {
			continue // its Close freed a slot
		}
		t := time.NewTimer(max(next, 10*time.Millisecond))
		select {
		case c.slots <- struct{}{}:
			t.Stop()
			c.setWaiting(0)
			return c.track(nc), nil
		case <-c.freed:
		case <-t.C: // a connection may have stalled by now
		case <-c.done:
			t.Stop()
			c.setWaiting(0)
			nc.Close()
			return nil, net.ErrClosed
		}
		t.Stop()
	}
}

// track wraps a connection that has a slot.
func (c *connLimiter) track(nc net.Conn) *limitedConn {
	lc := &limitedConn{Conn: nc, c: c}
	now := time.Now().UnixNano()
	lc.lastRead.Store(now)
	lc.phaseAt.Store(now)
	c.mu.Lock()
	c.conns[lc] = struct{}{}
	c.mu.Unlock()
	return lc
}

func (c *connLimiter) setWaiting(n int) {
	c.mu.Lock()
	c.waiting = n
	c.mu.Unlock()
}

func (l *limitedListener) Close() error {
	l.c.once.Do(func() { close(l.c.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when it is closed, once, and notes when
// its client last sent something.
type limitedConn struct {
	net.Conn
	c    *connLimiter
	once sync.Once
	// lastRead and phaseAt are Unix nanoseconds: the last read that
	// returned bytes, and when the phase last changed.
	lastRead atomic.Int64
	phaseAt  atomic.Int64
	phase    atomic.Int32
}

func (lc *limitedConn) Read(p []byte) (int, error) {
	n, err := lc.Conn.Read(p)
	if n > 0 {
		lc.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

func (lc *limitedConn) setPhase(p int32) {
	if lc.phase.Swap(p) != p {
		lc.phaseAt.Store(time.Now().UnixNano())
	}
}

// waitingSince reports whether the connection waits for its client (for a
// request or its body) and since when nothing has arrived.
func (lc *limitedConn) waitingSince() (time.Time, bool) {
	if lc.phase.Load() == phaseServing {
		return time.Time{}, false
	}
	return time.Unix(0, max(lc.lastRead.Load(), lc.phaseAt.Load())), true
}

func (lc *limitedConn) Close() error {
	err := lc.Conn.Close()
	lc.once.Do(func() {
		lc.c.mu.Lock()
		delete(lc.c.idle, lc)
		delete(lc.c.conns, lc)
		lc.c.mu.Unlock()
		<-lc.c.slots
		lc.c.signal()
	})
	return err
}
