package aggregate

import (
	"context"
	"sync"
	"time"

	"github.com/amends-dev/amends/eventstore"
)

// lastChecker is what a Store may offer to let the Service skip decoding
// a record it decoded before: *jsstore.Store does.
type lastChecker interface {
	// LoadLastIfChanged returns the last stream and true, or false without
	// decoding if the last stream is still the one at sequence known.
	LoadLastIfChanged(ctx context.Context, a eventstore.AggregateID, known uint64) (eventstore.Stream, bool, error)
}

// leaderLoader is what a Store may offer to read an aggregate's last
// stream from where every acknowledged write is, when its usual reads may
// be answered by a replica that lags: *jsstore.Store does. The Service
// asks it before it reports a rejection or a missing record, so that
// neither is decided on a stale read.
type leaderLoader interface {
	LoadLastFromLeader(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error)
}

// recordCacheSize bounds how many records a Service keeps decoded.
const recordCacheSize = 4096

// cachedRecord is a record as of its stream at seq, as the Service read
// or appended it at the clock's time at (epoch milliseconds).
type cachedRecord struct {
	seq, version uint64
	snap         snapshot
	at           int64
}

// guessWindow is how long after a Service read or appended a record it
// decides a command on it without reading it first. Past it, another
// writer (the scheduler, a replay in another process, an operator) has
// likely moved the record on, and a decision on the old state would cost
// a refused append before the read.
const guessWindow = 10 * time.Second

// recordCache keeps the last decoded snapshot of recently used records.
// An entry is valid as long as the record's last stream is at its seq,
// which the store checks at every load. Safe for concurrent use.
type recordCache struct {
	mu    sync.Mutex
	items map[string]cachedRecord
}

func (c *recordCache) get(id string) (cachedRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.items[id]
	return r, ok
}

// put keeps r unless the cache holds the record at a later version: an
// answer from a replica that lags never replaces what was seen committed.
func (c *recordCache) put(id string, r cachedRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = make(map[string]cachedRecord)
	}
	if old, ok := c.items[id]; ok && old.version > r.version {
		return
	}
	if len(c.items) >= recordCacheSize {
		n := len(c.items) / 2 // forget about half, at random
		for k := range c.items {
			delete(c.items, k)
			if n--; n <= 0 {
				break
			}
		}
	}
	c.items[id] = r
}
