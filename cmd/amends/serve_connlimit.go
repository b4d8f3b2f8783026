package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter caps the connections an HTTP server holds open, so that a
// flood of clients cannot take the file descriptors the NATS server and
// its store need. Its listener accepts a connection beyond the cap only to
// hold it unserved until a slot frees: it first closes the connection that
// has been idle (a keep-alive between requests) the longest, so a new
// client is served at once while old clients only idle; when every
// connection is busy, the new one waits (and later ones wait in the
// kernel's backlog) until one ends. At most max+1 descriptors are in use.
//
// Set ConnState as the http.Server's ConnState hook: it is how the limiter
// learns which connections are idle. Safe for concurrent use.
type connLimiter struct {
	max   int
	slots chan struct{}
	// freed is signalled when a connection becomes idle or closes.
	freed chan struct{}
	done  chan struct{}
	once  sync.Once

	mu   sync.Mutex
	idle map[*limitedConn]time.Time // idle since
	// waiting is 1 while an accepted connection waits for a slot (tests).
	waiting int
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{
		max: max, slots: make(chan struct{}, max), freed: make(chan struct{}, 1), done: make(chan struct{}),
		idle: map[*limitedConn]time.Time{},
	}
}

// Listen wraps l; closing the returned listener closes l.
func (c *connLimiter) Listen(l net.Listener) net.Listener { return &limitedListener{Listener: l, c: c} }

// ConnState is the http.Server hook that tracks idle connections.
func (c *connLimiter) ConnState(nc net.Conn, state http.ConnState) {
	lc, ok := nc.(*limitedConn)
	if !ok {
		return
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

func (c *connLimiter) signal() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// evictIdle closes the connection idle the longest and reports whether
// there was one.
func (c *connLimiter) evictIdle() bool {
	c.mu.Lock()
	var oldest *limitedConn
	var since time.Time
	for lc, t := range c.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = lc, t
		}
	}
	delete(c.idle, oldest)
	c.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close()
	return true
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
			return &limitedConn{Conn: nc, c: c}, nil
		default:
		}
		c.setWaiting(1)
		if c.evictIdle() {
			continue // its Close freed a slot
		}
		select {
		case c.slots <- struct{}{}:
			c.setWaiting(0)
			return &limitedConn{Conn: nc, c: c}, nil
		case <-c.freed:
		case <-c.done:
			c.setWaiting(0)
			nc.Close()
			return nil, net.ErrClosed
		}
	}
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

// limitedConn gives its slot back when it is closed, once.
type limitedConn struct {
	net.Conn
	c    *connLimiter
	once sync.Once
}

func (lc *limitedConn) Close() error {
	err := lc.Conn.Close()
	lc.once.Do(func() {
		lc.c.mu.Lock()
		delete(lc.c.idle, lc)
		lc.c.mu.Unlock()
		<-lc.c.slots
		lc.c.signal()
	})
	return err
}
