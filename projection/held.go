package projection

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// held is the set of messages a projector received and has not settled
// yet: queued for a worker or being projected. heartbeat keeps them from
// being redelivered while they wait. Safe for concurrent use.
type held struct {
	mu   sync.Mutex
	tick uint64
	msgs map[jetstream.Msg]uint64 // the tick it arrived in
}

func newHeld() *held { return &held{msgs: map[jetstream.Msg]uint64{}} }

func (h *held) add(m jetstream.Msg) {
	h.mu.Lock()
	h.msgs[m] = h.tick
	h.mu.Unlock()
}

func (h *held) drop(m jetstream.Msg) {
	h.mu.Lock()
	delete(h.msgs, m)
	h.mu.Unlock()
}

// heartbeat sends InProgress, every interval until done is closed, for
// each message held since before the last tick, so the server restarts its
// AckWait rather than redeliver it.
func (h *held) heartbeat(done <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var due []jetstream.Msg
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		h.mu.Lock()
		due = due[:0]
		for m, at := range h.msgs {
			if at < h.tick {
				due = append(due, m)
			}
		}
		h.tick++
		h.mu.Unlock()
		for _, m := range due {
			_ = m.InProgress() // an already settled message refuses it; a lost one is redelivered
		}
	}
}
