// Package inflight keeps JetStream messages that a consumer received and
// has not settled yet from being redelivered while they wait: a queue of
// work or a slow handler must not look like a lost message to the server.
package inflight

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Set is the messages received and not settled yet. Safe for concurrent
// use.
type Set struct {
	mu   sync.Mutex
	tick uint64
	msgs map[jetstream.Msg]uint64 // the tick it arrived in
}

// New returns an empty Set.
func New() *Set { return &Set{msgs: map[jetstream.Msg]uint64{}} }

// Add holds m until Drop.
func (s *Set) Add(m jetstream.Msg) {
	s.mu.Lock()
	s.msgs[m] = s.tick
	s.mu.Unlock()
}

// Drop forgets m, once it is settled (acked, naked or terminated).
func (s *Set) Drop(m jetstream.Msg) {
	s.mu.Lock()
	delete(s.msgs, m)
	s.mu.Unlock()
}

// Len returns how many messages are held.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// Heartbeat sends InProgress, every interval until done is closed, for
// each message held since before the last tick, so the server restarts
// its AckWait rather than redeliver it. Run it in its own goroutine, with
// every well below the consumer's AckWait (a third, say).
func (s *Set) Heartbeat(done <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var due []jetstream.Msg
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		due = due[:0]
		for m, at := range s.msgs {
			if at < s.tick {
				due = append(due, m)
			}
		}
		s.tick++
		s.mu.Unlock()
		for _, m := range due {
			_ = m.InProgress() // an already settled message refuses it; a lost one is redelivered
		}
	}
}
