package projection

import (
	"sync"

	"github.com/amends-dev/amends/api"
)

// viewCache remembers the views this projector wrote last, by record id,
// with where they are (key and KV revision), so the next stream of a record is written with one
// compare-and-set and no read. A stale entry (another projector wrote
// since) only costs a failed compare-and-set and a read. Bounded: when
// full, an arbitrary entry makes room. Safe for concurrent use.
type viewCache struct {
	mu  sync.Mutex
	m   map[string]cachedView
	max int
}

type cachedView struct {
	at   place
	view api.View
}

// place is where a record's view is stored: the key of the last change of
// the record's keys and its revision, and whether that change deleted
// the view (gone). The zero place is not known: no change was read.
type place struct {
	key  string
	rev  uint64
	gone bool
}

func newViewCache(max int) *viewCache {
	return &viewCache{m: make(map[string]cachedView), max: max}
}

func (c *viewCache) get(key string) (cachedView, bool) {
	if c.max == 0 {
		return cachedView{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *viewCache) put(key string, at place, v api.View) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = cachedView{at, v}
}

func (c *viewCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// has reports whether the cache holds record id at revision rev: a view
// this projector wrote (or read and checked) itself.
func (c *viewCache) has(id string, rev uint64) bool {
	v, ok := c.get(id)
	return ok && v.at.rev == rev
}

// clear forgets every view (the bucket was created again).
func (c *viewCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
