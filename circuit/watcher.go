package circuit

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/wait"
)

// Watcher keeps the circuits of a bucket (or of one context) in memory by
// watching it: the API, the dashboard, the metrics and the scheduler's
// drains read circuits from one. Until it has loaded the bucket it knows
// none (Ready tells when it has), and it loads each key's last revision
// only. A stored circuit that does not validate is quarantined and logged
// (once per revision) and left out, so its function reads as closed.
// Safe for concurrent use.
type Watcher struct {
	store   *Store
	pattern string
	logger  *slog.Logger
	changed func(State, uint64)

	mu     sync.RWMutex
	states map[Function]State
	bad    map[string]string // key -> why it does not validate
	revs   map[string]uint64 // key -> the last revision applied
	ready  chan struct{}
	once   sync.Once
}

// Watcher returns a watcher of every circuit of s (context "" ) or of one
// context's, logging to logger (slog.Default if nil). changed, if not
// nil, is called with each circuit the watch delivers and its revision,
// on the watch's goroutine, after the watcher has it (a deleted circuit
// as New). It does no I/O until Run.
func (s *Store) Watcher(context string, logger *slog.Logger, changed func(State, uint64)) *Watcher {
	if logger == nil {
		logger = slog.Default()
	}
	pattern := ">"
	if context != "" {
		pattern = context + ".>"
	}
	return &Watcher{store: s, pattern: pattern, logger: logger, changed: changed,
		states: map[Function]State{}, bad: map[string]string{}, revs: map[string]uint64{}, ready: make(chan struct{})}
}

// Ready is closed once the watcher has loaded the circuits present when
// it started.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Get returns f's circuit; ok is false if it has none (it is closed and
// never opened) or the watcher has not loaded yet.
func (w *Watcher) Get(f Function) (State, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	s, ok := w.states[f]
	return s, ok
}

// List returns the circuits it knows, by function.
func (w *Watcher) List() []State {
	w.mu.RLock()
	out := make([]State, 0, len(w.states))
	for _, s := range w.states {
		out = append(out, s)
	}
	w.mu.RUnlock()
	slices.SortFunc(out, func(a, b State) int { return strings.Compare(a.Function.String(), b.Function.String()) })
	return out
}

// Invalid returns the keys whose stored circuit does not validate, with
// why.
func (w *Watcher) Invalid() map[string]string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make(map[string]string, len(w.bad))
	for k, v := range w.bad {
		out[k] = v
	}
	return out
}

// Run watches the bucket until ctx ends, then returns nil. A lost watch
// is started again after a backoff from a second to 30 s.
func (w *Watcher) Run(ctx context.Context) error {
	wait.Restart(ctx, time.Second, 30*time.Second, w.watch, func(err error, attempt int, backoff time.Duration) bool {
		w.logger.Warn("circuits: the watch of the circuits stopped; restarting it", "bucket", w.store.Bucket(), "err", err, "attempt", attempt, "backoff", backoff)
		return true
	})
	return nil
}

func (w *Watcher) watch(ctx context.Context) error {
	kw, err := w.store.Watch(ctx, w.pattern)
	if err != nil {
		return err
	}
	defer func() { _ = kw.Stop() }()
	// The bucket keeps a few revisions a key and the watch delivers them
	// all: only each key's last is applied, in revision order, so that an
	// old state is neither reported to changed nor quarantined again.
	latest := map[string]jetstream.KeyValueEntry{}
	if err := kvwatch.Initial(ctx, w.store.JetStream(), w.store.KV(), w.pattern, kw, func(e jetstream.KeyValueEntry) { latest[e.Key()] = e }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	initial := slices.SortedFunc(maps.Values(latest), func(a, b jetstream.KeyValueEntry) int { return cmp.Compare(a.Revision(), b.Revision()) })
	for _, e := range initial {
		w.apply(ctx, e)
	}
	w.once.Do(func() { close(w.ready) })
	return kvwatch.Follow(ctx, kw, func(e jetstream.KeyValueEntry) { w.apply(ctx, e) })
}

// apply takes the change e of a key, unless the watcher applied a later
// revision of it.
func (w *Watcher) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	w.mu.Lock()
	stale := e.Revision() <= w.revs[e.Key()]
	if !stale {
		w.revs[e.Key()] = e.Revision()
	}
	w.mu.Unlock()
	if stale {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		if f, err := ParseFunction(e.Key()); err == nil {
			w.mu.Lock()
			delete(w.states, f)
			delete(w.bad, e.Key())
			w.mu.Unlock()
			if w.changed != nil {
				w.changed(New(f), e.Revision())
			}
		}
		return
	}
	st, err := w.store.store.DecodeEntry(ctx, e) // a refusal is quarantined, once per revision
	if err != nil {
		w.mu.Lock()
		seen := w.bad[e.Key()] == err.Error()
		w.bad[e.Key()] = err.Error()
		if f, ferr := ParseFunction(e.Key()); ferr == nil {
			delete(w.states, f)
		}
		w.mu.Unlock()
		if !seen {
			w.logger.Warn("circuits: a stored circuit does not validate; its function is treated as closed until it is rewritten (amends quarantine list)",
				"bucket", w.store.Bucket(), "key", e.Key(), "revision", e.Revision(), "err", err)
		}
		return
	}
	w.mu.Lock()
	w.states[st.Function] = st
	delete(w.bad, e.Key())
	w.mu.Unlock()
	if w.changed != nil {
		w.changed(st, e.Revision())
	}
}
