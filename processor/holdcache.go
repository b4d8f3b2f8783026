package processor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/wait"
)

// holdCache mirrors the context's holds from a KV watch, so that a
// dispatch asks the bucket only when its (function, aggregate) is held.
// Safe for concurrent use.
type holdCache struct {
	mu     sync.RWMutex
	byKey  map[string]api.Hold
	byHead map[string]string // head record id → key
	revs   map[string]uint64 // last revision applied per key, deletions included
	bad    map[string]uint64 // keys whose stored value does not validate → its revision
	notify chan struct{}     // capacity 1: "a hold changed"

	// decode validates a put the watch delivered (the bucket's decoder).
	decode func(e jetstream.KeyValueEntry) (api.Hold, error)
	// damaged is told, outside the lock, of a hold whose stored value does
	// not validate or that was deleted while it still held events, with
	// the last valid value the cache had (nil if none).
	damaged func(d damage)
}

// damage is a hold the cache found damaged: the key, the revision of the
// damage, the last valid hold seen (nil if none), whether it was deleted
// and why it is damaged.
type damage struct {
	key     string
	rev     uint64
	prev    *api.Hold
	deleted bool
	cause   error
}

// maxHoldRevs bounds the revisions the cache remembers before it forgets
// those of deleted holds.
const maxHoldRevs = 1 << 16

func newHoldCache() *holdCache {
	return &holdCache{byKey: make(map[string]api.Hold), byHead: make(map[string]string), revs: make(map[string]uint64), bad: make(map[string]uint64),
		notify: make(chan struct{}, 1), decode: func(jetstream.KeyValueEntry) (api.Hold, error) { return api.Hold{}, errNoHold }, damaged: func(damage) {}}
}

// held reports whether key is held: a hold, or a stored value that does
// not validate (which holds until it is repaired).
func (c *holdCache) held(key string) bool {
	c.mu.RLock()
	_, ok := c.byKey[key]
	_, bad := c.bad[key]
	c.mu.RUnlock()
	return ok || bad
}

func (c *holdCache) byRecord(id string) (api.Hold, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.byHead[id]
	if !ok {
		return api.Hold{}, false
	}
	h, ok := c.byKey[k]
	return h, ok
}

// waitingHold is a hold waiting on its head, with its revision.
type waitingHold struct {
	key  string
	rev  uint64
	hold api.Hold
}

// waiting returns the holds that wait on a head record (not released, not
// recovered) and began before (epoch ms).
func (c *holdCache) waiting(before int64) []waitingHold {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []waitingHold
	for k, h := range c.byKey {
		if !h.Releasing && h.Recovered == nil && h.Head.Record != "" && h.Head.Since < before {
			out = append(out, waitingHold{key: k, rev: c.revs[k], hold: h})
		}
	}
	return out
}

// releasing returns the holds being released.
func (c *holdCache) releasing() []api.Hold {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []api.Hold
	for _, h := range c.byKey {
		if h.Releasing {
			out = append(out, h)
		}
	}
	return out
}

// apply takes one change the watch delivered. A value that does not
// validate is not a hold: the key counts as held (held) and is reported
// damaged with the last valid hold the cache had, to be repaired. So is a
// deletion of a hold that was not being released: the processor only
// deletes a hold whose release gave its last event.
func (c *holdCache) apply(e jetstream.KeyValueEntry) {
	key := e.Key()
	c.mu.RLock()
	prev, had := c.byKey[key]
	stale := e.Revision() < c.revs[key]
	c.mu.RUnlock()
	if stale {
		return
	}
	var d *damage
	switch {
	case e.Operation() == jetstream.KeyValuePut:
		v, err := c.decode(e)
		if err == nil {
			c.set(key, &v, e.Revision())
			return
		}
		d = &damage{key: key, rev: e.Revision(), cause: err}
		c.mu.Lock()
		c.bad[key] = e.Revision()
		c.mu.Unlock()
		c.set(key, nil, e.Revision())
	default:
		c.mu.Lock()
		delete(c.bad, key)
		c.mu.Unlock()
		c.set(key, nil, e.Revision())
		if had && !prev.Releasing {
			d = &damage{key: key, rev: e.Revision(), deleted: true,
				cause: fmt.Errorf("the hold was deleted (%s) while it held %d events and was not released", e.Operation(), len(prev.Held))}
		}
	}
	if d != nil {
		if had {
			d.prev = &prev
		}
		c.damaged(*d)
	}
}

// put records a hold this instance wrote at revision rev.
func (c *holdCache) put(key string, h api.Hold, rev uint64) { c.set(key, &h, rev) }

// set applies revision rev of key (h nil: deleted) unless a later one was
// applied.
func (c *holdCache) set(key string, h *api.Hold, rev uint64) {
	c.mu.Lock()
	if rev < c.revs[key] {
		c.mu.Unlock()
		return
	}
	if len(c.revs) >= maxHoldRevs {
		for k := range c.revs { // forget the revisions of deleted holds
			if _, ok := c.byKey[k]; !ok {
				delete(c.revs, k)
			}
		}
	}
	c.revs[key] = rev
	if h != nil {
		delete(c.bad, key)
	}
	if old, ok := c.byKey[key]; ok {
		delete(c.byHead, old.Head.Record)
		delete(c.byKey, key)
	}
	if h != nil {
		c.byKey[key] = *h
		c.byHead[h.Head.Record] = key
	}
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// watchHolds starts a watch of the holds of context and returns once the
// cache holds every existing one; loop feeds later changes until ctx ends.
// A watch that is lost meanwhile is started again (after a backoff from
// 100 ms to 10 s) and reads the bucket anew: a hold the new watch does not
// have is dropped from the cache (its deletion was missed while no watch
// ran).
func watchHolds(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, boundedContext string, c *holdCache, logger *slog.Logger) (loop func(ctx context.Context), err error) {
	pattern := boundedContext + ".>"
	w, err := c.start(ctx, js, kv, pattern, false)
	if err != nil {
		return nil, fmt.Errorf("watch the holds of context %s: %w", boundedContext, err)
	}
	return func(ctx context.Context) {
		wait.Restart(ctx, 100*time.Millisecond, 10*time.Second, func(ctx context.Context) error {
			if w == nil {
				var err error
				if w, err = c.start(ctx, js, kv, pattern, true); err != nil {
					return err
				}
			}
			defer func() { _ = w.Stop(); w = nil }()
			return kvwatch.Follow(ctx, w, c.apply)
		}, func(err error, attempt int, backoff time.Duration) bool {
			logger.Warn("amends processor: the watch of the holds stopped; restarting it", "processor_context", boundedContext,
				"err", err, "attempt", attempt, "backoff", backoff)
			return true
		})
	}, nil
}

// start watches the holds of pattern and applies every present one, up to
// the leader's last revision (the watch's own end signal comes early
// while holds change, see kvwatch). again, after a lost watch: a hold the
// cache has that the bucket no longer does is dropped.
func (c *holdCache) start(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, pattern string, again bool) (jetstream.KeyWatcher, error) {
	w, err := kv.Watch(ctx, pattern, jetstream.IncludeHistory())
	if err != nil {
		return nil, err
	}
	seen, upTo := map[string]bool{}, uint64(0)
	apply := c.apply
	if again {
		apply = func(e jetstream.KeyValueEntry) {
			seen[e.Key()], upTo = true, max(upTo, e.Revision())
			c.apply(e)
		}
	}
	if err := kvwatch.Initial(ctx, js, kv, pattern, w, apply); err != nil {
		_ = w.Stop()
		return nil, err
	}
	if again {
		c.keepOnly(seen, upTo)
	}
	return w, nil
}

// keepOnly drops the holds of every key not in keys, unless the cache has
// a revision of it after upTo (this instance wrote it after the watch
// read the bucket).
func (c *holdCache) keepOnly(keys map[string]bool, upTo uint64) {
	c.mu.RLock()
	var drop []string
	for k := range c.byKey {
		if !keys[k] && c.revs[k] <= upTo {
			drop = append(drop, k)
		}
	}
	for k := range c.bad {
		if !keys[k] && c.revs[k] <= upTo {
			drop = append(drop, k)
		}
	}
	c.mu.RUnlock()
	for _, k := range drop {
		c.gone(k)
	}
}

// gone drops key, which the bucket no longer has, keeping its revision.
func (c *holdCache) gone(key string) {
	c.mu.Lock()
	delete(c.bad, key)
	if old, ok := c.byKey[key]; ok {
		delete(c.byHead, old.Head.Record)
		delete(c.byKey, key)
	}
	c.mu.Unlock()
}

func (c *holdCache) get(key string) (api.Hold, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h, ok := c.byKey[key]
	return h, ok
}
