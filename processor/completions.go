package processor

import "sync"

// completions remembers, per stream sequence, which tasks of a message
// are done on this instance, so that a message that comes back (nak'ed
// after a recording failed, redelivered after its ack was lost, or after
// the consumer was re-created) does not run again what succeeded or had
// its failure recorded. It is bounded: a nak'ed message's entry is kept
// until the message is acked here or the oldest entries make room, and
// the sequences of the last acked messages are kept in a ring. Beyond
// this instance delivery stays at least once. Safe for concurrent use.
type completions struct {
	shards [completionShards]completionShard
}

const completionShards = 8

type completionShard struct {
	mu      sync.Mutex
	partial map[uint64]bits // nak'ed messages: the tasks done
	order   []uint64        // partial's keys, oldest first (a ring)
	oldest  int
	acked   []uint64 // the last acked sequences (a ring)
	next    int
}

// newCompletions bounds the entries by the consumer's MaxAckPending.
func newCompletions(maxAckPending int) *completions {
	c := &completions{}
	per := max(64, 4*maxAckPending/completionShards)
	for i := range c.shards {
		c.shards[i] = completionShard{partial: make(map[uint64]bits), order: make([]uint64, 0, per), acked: make([]uint64, per)}
	}
	return c
}

func (c *completions) shard(seq uint64) *completionShard { return &c.shards[seq%completionShards] }

// lookup returns the tasks done of message seq, and all=true when it was
// acked here already (its ack was lost). redelivered says whether the
// server delivered it before: only then is the ring of acked ones read.
func (c *completions) lookup(seq uint64, redelivered bool) (done bits, all bool) {
	if seq == 0 {
		return bits{}, false
	}
	s := c.shard(seq)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.partial[seq]; ok {
		return b, false
	}
	if redelivered {
		for _, a := range s.acked {
			if a == seq {
				return bits{}, true
			}
		}
	}
	return bits{}, false
}

// remember keeps the tasks done of message seq, which comes back.
func (c *completions) remember(seq uint64, done bits) {
	if seq == 0 || (done.lo == 0 && len(done.hi) == 0) {
		return
	}
	s := c.shard(seq)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.partial[seq]; ok {
		s.partial[seq] = b.union(done)
		return
	}
	if len(s.order) == cap(s.order) {
		delete(s.partial, s.order[s.oldest])
		s.order[s.oldest] = seq
		s.oldest = (s.oldest + 1) % len(s.order)
	} else {
		s.order = append(s.order, seq)
	}
	s.partial[seq] = done
}

// forget drops message seq's entry once it is settled for good; acked
// notes it in the ring of acked messages.
func (c *completions) forget(seq uint64, acked bool) {
	if seq == 0 {
		return
	}
	s := c.shard(seq)
	s.mu.Lock()
	if len(s.partial) > 0 {
		delete(s.partial, seq) // its key stays in order until overwritten
	}
	if acked {
		s.acked[s.next] = seq
		s.next = (s.next + 1) % len(s.acked)
	}
	s.mu.Unlock()
}
