package processor

import (
	"context"
	"fmt"
	"sync"

	"github.com/amends-dev/amends/eventstore"
)

// stateCache keeps the latest state of recently handled aggregates, so a
// STATE_EVENT function of a stream right after the previous one costs one
// evolve instead of a history load. Safe for concurrent use.
type stateCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]cachedState
}

type cachedState struct {
	version uint64
	state   any
}

func newStateCache(n int) *stateCache {
	return &stateCache{max: n, entries: make(map[string]cachedState)}
}

func (c *stateCache) get(k string) (cachedState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return e, ok
}

func (c *stateCache) put(k string, e cachedState) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		for victim := range c.entries { // evict an arbitrary entry
			delete(c.entries, victim)
			break
		}
	}
	c.entries[k] = e
}

// stateAfter returns the state of st's aggregate after st. cache says
// whether to use and update the cache (normal deliveries, which come in
// order per aggregate) or to rebuild from history alone (replays).
func (p *Processor) stateAfter(ctx context.Context, st *eventstore.Stream, cache bool) (any, error) {
	ev, ok := p.evolver(st.Aggregate.Type)
	if !ok {
		return nil, fmt.Errorf("no evolve registered for aggregate type %s: %w", st.Aggregate.Type, ErrInvalidFunction)
	}
	k := st.Aggregate.String()
	if cache {
		if e, ok := p.states.get(k); ok {
			switch e.version {
			case st.Version:
				return e.state, nil
			case st.Version - 1:
				s, err := ev.apply(e.state, st)
				if err == nil {
					p.states.put(k, cachedState{st.Version, s})
				}
				return s, err
			}
		}
	}
	state := ev.initial(st.Aggregate)
	if st.Version > 1 {
		// The history as of st, whatever came after it: read through st's
		// own previous sequences, every message checked to be the
		// aggregate's, in as many round trips as a load of the latest.
		var history []eventstore.Stream
		var err error
		if st.Seq != 0 {
			history, err = p.store.LoadAt(ctx, st.Aggregate, 1, st.Seq)
		} else {
			history, err = p.store.Load(ctx, st.Aggregate, 1)
		}
		if err != nil {
			return nil, fmt.Errorf("load the history of %s to build its state: %w", st.Aggregate, err)
		}
		for i := range history {
			if history[i].Version >= st.Version {
				break
			}
			if state, err = ev.apply(state, &history[i]); err != nil {
				return nil, err
			}
		}
	}
	state, err := ev.apply(state, st)
	if err == nil && cache {
		p.states.put(k, cachedState{st.Version, state})
	}
	return state, err
}
