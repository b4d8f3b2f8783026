package index

import (
	"context"
	"fmt"
	"slices"
)

// waiter is a WaitFor call waiting for a record to reach a version.
type waiter struct {
	version uint64
	done    chan struct{}
}

// WaitFor returns once the index holds record id at version or later, so
// a caller that has just executed a command (aggregate.Result.Version) can
// read its own write from List, Count or Get. It returns ctx's error, with
// the record and version, if ctx ends first. Safe for concurrent use.
func (ix *Index) WaitFor(ctx context.Context, id string, version uint64) error {
	key := packID(id) // the waiters are keyed as the entries hold ids
	ix.mu.Lock()
	if slot, ok := ix.slotOf(key); ok && ix.slots.at(slot).version >= version {
		ix.mu.Unlock()
		return nil
	}
	w := waiter{version: version, done: make(chan struct{})}
	ix.waiters[key] = append(ix.waiters[key], w)
	ix.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		ix.mu.Lock()
		ws := slices.DeleteFunc(ix.waiters[key], func(x waiter) bool { return x.done == w.done })
		if len(ws) == 0 {
			delete(ix.waiters, key)
		} else {
			ix.waiters[key] = ws
		}
		ix.mu.Unlock()
		select {
		case <-w.done: // reached while we gave up
			return nil
		default:
		}
		return fmt.Errorf("wait for record %s version %d: %w", id, version, ctx.Err())
	}
}

// notify releases the waiters e's version satisfies. The caller holds the
// write lock.
func (ix *Index) notify(e *entry) {
	ws, ok := ix.waiters[e.id]
	if !ok {
		return
	}
	ws = slices.DeleteFunc(ws, func(w waiter) bool {
		if w.version <= e.version {
			close(w.done)
			return true
		}
		return false
	})
	if len(ws) == 0 {
		delete(ix.waiters, e.id)
	} else {
		ix.waiters[e.id] = ws
	}
}
