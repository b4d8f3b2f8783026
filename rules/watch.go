package rules

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/wait"
)

// DefaultFlushEvery is how often a Watcher adds its match counts to the
// rules.
const DefaultFlushEvery = 10 * time.Second

// Matcher finds the rule that acts on a failure. *Set and *Watcher
// satisfy it.
type Matcher interface {
	Match(x Failure, now time.Time) (*api.Rule, bool)
}

var (
	_ Matcher = (*Set)(nil)
	_ Matcher = (*Watcher)(nil)
)

// Watcher keeps the current Set of a store's rules by watching its bucket.
// Create it with Store.Watcher and Run it; until its first load it matches
// nothing (Ready tells when it has loaded). Safe for concurrent use.
type Watcher struct {
	store  *Store
	every  time.Duration
	logger *slog.Logger

	set    atomic.Pointer[Set]
	counts sync.Map // rule id -> *atomic.Int64, matches not yet flushed
	ready  chan struct{}
	once   sync.Once
}

// Watcher returns a watcher of s's rules that flushes its match counts
// every flushEvery (DefaultFlushEvery if <= 0), logging to logger
// (slog.Default if nil). It does no I/O until Run.
func (s *Store) Watcher(flushEvery time.Duration, logger *slog.Logger) *Watcher {
	if flushEvery <= 0 {
		flushEvery = DefaultFlushEvery
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &Watcher{store: s, every: flushEvery, logger: logger, ready: make(chan struct{})}
	w.set.Store(NewSet(nil))
	return w
}

// Ready is closed once the watcher has loaded the rules present when it
// started.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Set returns the current rules.
func (w *Watcher) Set() *Set { return w.set.Load() }

// Match is Set().Match, and counts the match for the rule's Recorded
// count. It does no I/O.
func (w *Watcher) Match(x Failure, now time.Time) (*api.Rule, bool) {
	r, ok := w.set.Load().Match(x, now)
	if ok {
		c, _ := w.counts.Load(r.ID)
		if c == nil {
			c, _ = w.counts.LoadOrStore(r.ID, new(atomic.Int64))
		}
		c.(*atomic.Int64).Add(1)
	}
	return r, ok
}

// Run watches the bucket and flushes the counts until ctx ends, then
// flushes once more (with a short deadline of its own) and returns nil. A
// lost watch is started again after a backoff from a second to 30 s.
func (w *Watcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { w.flushLoop(ctx) })
	wait.Restart(ctx, time.Second, 30*time.Second, w.watch, func(err error, attempt int, backoff time.Duration) bool {
		w.logger.Warn("rules: the watch of the rules stopped; restarting it", "err", err, "attempt", attempt, "backoff", backoff)
		return true
	})
	wg.Wait()
	return nil
}

func (w *Watcher) watch(ctx context.Context) error {
	kv := w.store.rules.KV()
	kw, err := kv.WatchAll(ctx, jetstream.IncludeHistory())
	if err != nil {
		return err
	}
	defer func() { _ = kw.Stop() }()
	rules := map[string]api.Rule{}
	publish := func() {
		list := make([]api.Rule, 0, len(rules))
		for _, r := range rules {
			list = append(list, r)
		}
		w.set.Store(NewSet(list))
	}
	// Every rule, up to the leader's last revision: the watch's own end
	// signal comes early while rules are written (a flush of the counts).
	if err := kvwatch.InitialAll(ctx, kv, kw, func(e jetstream.KeyValueEntry) { w.apply(ctx, rules, e) }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	publish()
	w.once.Do(func() { close(w.ready) })
	return kvwatch.Follow(ctx, kw, func(e jetstream.KeyValueEntry) {
		w.apply(ctx, rules, e)
		publish()
	})
}

// apply takes one change of the bucket. A stored rule that does not
// validate (DecodeStored) is dropped, so it matches nothing, and reported
// to the quarantine by the store (once per revision).
func (w *Watcher) apply(ctx context.Context, rules map[string]api.Rule, e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		delete(rules, e.Key())
		return
	}
	r, err := w.store.rules.DecodeEntry(ctx, e)
	if err != nil {
		delete(rules, e.Key())
		return
	}
	rules[e.Key()] = r
}

func (w *Watcher) flushLoop(ctx context.Context) {
	wait.Every(ctx, w.every, func() { w.Flush(ctx) })
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	w.Flush(fctx)
}

// Flush adds the matches counted since the last flush to the rules'
// Recorded counts now. Counts that cannot be written are kept for the
// next flush; those of rules that no longer exist are dropped.
func (w *Watcher) Flush(ctx context.Context) {
	w.counts.Range(func(k, v any) bool {
		c := v.(*atomic.Int64)
		n := c.Swap(0)
		if n == 0 {
			return true
		}
		if err := w.store.AddRecorded(ctx, k.(string), n); err != nil {
			if !isNotFound(err) {
				c.Add(n)
				w.logger.Debug("rules: count not flushed", "rule", k, "err", err)
			}
		}
		return true
	})
}
