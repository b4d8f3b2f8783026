package failure

import (
	"fmt"
	"sync"

	"github.com/amends-dev/amends/aggregate"
)

var registry struct {
	mu      sync.RWMutex
	entries []*entry
}

type entry struct {
	m Matcher
	r aggregate.Recoverability
}

// Register classifies every error that m matches as r, for every function
// without a rule of its own for it (Wow's RecoverableExceptionRegistrar). A
// later registration does not replace an earlier one: the nearest match in
// the chain wins and a tie goes to RECOVERABLE. It returns a function that
// removes the registration. r must be RECOVERABLE or UNRECOVERABLE;
// anything else returns an error. Safe for concurrent use.
func Register(m Matcher, r aggregate.Recoverability) (unregister func(), err error) {
	if m == nil {
		return nil, fmt.Errorf("failure: register: the matcher is nil")
	}
	if r != aggregate.Recoverable && r != aggregate.Unrecoverable {
		return nil, fmt.Errorf("failure: register %s: recoverability must be RECOVERABLE or UNRECOVERABLE, got %q", m, r)
	}
	e := &entry{m: m, r: r}
	registry.mu.Lock()
	registry.entries = append(registry.entries, e)
	registry.mu.Unlock()
	return func() {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		for i, x := range registry.entries {
			if x == e {
				registry.entries = append(registry.entries[:i:i], registry.entries[i+1:]...)
				return
			}
		}
	}, nil
}

// registered classifies err with the registry.
func registered(err error) (aggregate.Recoverability, bool) {
	registry.mu.RLock()
	entries := registry.entries
	registry.mu.RUnlock()
	if len(entries) == 0 {
		return "", false
	}
	var rec, unrec []Matcher
	for _, e := range entries {
		if e.r == aggregate.Recoverable {
			rec = append(rec, e.m)
		} else {
			unrec = append(unrec, e.m)
		}
	}
	return byDistance(depthOf(err, rec), depthOf(err, unrec))
}
