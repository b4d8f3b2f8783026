package jsstore

import "sync"

// position is where an aggregate's last known stream is stored.
type position struct {
	version  uint64 // the stream's version
	seq      uint64 // its stream sequence
	firstSeq uint64 // the sequence of version 1
	prevs    string // the HeaderPrevSeqs value of that stream
	prevSeq  uint64 // the first sequence of prevs (version-1's); 0 for version 1
	// expect, when set, is the sequence of the subject's last message, a
	// skipped one after this stream (see Skip): appends expect it.
	expect uint64
}

// last is the sequence an append after p expects on the subject.
func (p position) last() uint64 { return max(p.seq, p.expect) }

// positionCache remembers the last position of recently used aggregates so
// an append that expects that version can skip reading it first. A hit is
// safe even when stale: a stream's sequence never changes, so an append
// that expects version v at sequence s fails with a conflict if the
// aggregate moved past v.
type positionCache struct {
	mu    sync.Mutex
	max   int
	items map[string]position
}

func newPositionCache(max int) *positionCache {
	return &positionCache{max: max, items: make(map[string]position)}
}

func (c *positionCache) get(subject string) (position, bool) {
	if c.max == 0 {
		return position{}, false
	}
	c.mu.Lock()
	p, ok := c.items[subject]
	c.mu.Unlock()
	return p, ok
}

// put records p unless the cache already knows a newer version.
func (c *positionCache) put(subject string, p position) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[subject]; ok && old.version > p.version {
		return
	}
	if len(c.items) >= c.max {
		// Forget about half at random: map iteration order is unspecified,
		// so this costs no bookkeeping on the hot path.
		n := len(c.items) / 2
		for k := range c.items {
			delete(c.items, k)
			if n--; n <= 0 {
				break
			}
		}
	}
	c.items[subject] = p
}

// advance records p if the cache knows an older version of subject; it
// never adds a subject, so positions of aggregates this Store does not
// work with never crowd out those it does.
func (c *positionCache) advance(subject string, p position) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[subject]; ok && old.version < p.version {
		c.items[subject] = p
	}
}

func (c *positionCache) forget(subject string) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	delete(c.items, subject)
	c.mu.Unlock()
}
