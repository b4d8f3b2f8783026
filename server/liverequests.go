package server

import (
	"context"
	"sync"
)

// liveRequests are the requests in flight by credential and session, so
// that signing out or revoking a token ends them at once: a live stream
// of the dashboard must not outlive its session. Safe for concurrent use.
type liveRequests struct {
	mu    sync.Mutex
	next  uint64
	byKey map[string]map[uint64]context.CancelFunc
}

func newLiveRequests() *liveRequests {
	return &liveRequests{byKey: map[string]map[uint64]context.CancelFunc{}}
}

// add registers cancel under every key and returns what removes it.
func (l *liveRequests) add(keys []string, cancel context.CancelFunc) (remove func()) {
	l.mu.Lock()
	l.next++
	id := l.next
	for _, k := range keys {
		m := l.byKey[k]
		if m == nil {
			m = map[uint64]context.CancelFunc{}
			l.byKey[k] = m
		}
		m[id] = cancel
	}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, k := range keys {
			if m := l.byKey[k]; m != nil {
				delete(m, id)
				if len(m) == 0 {
					delete(l.byKey, k)
				}
			}
		}
	}
}

// end cancels every request registered under key.
func (l *liveRequests) end(key string) {
	l.mu.Lock()
	cancels := make([]context.CancelFunc, 0, len(l.byKey[key]))
	for _, c := range l.byKey[key] {
		cancels = append(cancels, c)
	}
	l.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}
