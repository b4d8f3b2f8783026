package circuit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/wait"
)

// DefaultFlushEvery is how often a Set adds the calls its breakers refused
// to their circuits.
const DefaultFlushEvery = time.Second

// Set is the breakers of one processor instance: it watches its
// context's circuits in the bucket, hands each breaker what the other
// instances change, and adds the refused calls to the circuits about
// once a second. Create the breakers before Run. Safe for concurrent use.
type Set struct {
	store    *Store
	instance string
	logger   *slog.Logger
	clock    aggregate.Clock
	watcher  *Watcher
	warn     every

	mu       sync.Mutex
	breakers map[Function]*Breaker
}

// NewSet returns the set of instance's breakers of context, sharing their
// circuits in store; a nil store keeps each circuit on this instance
// alone. logger and clock may be nil (slog.Default, the system clock). It
// does no I/O.
func NewSet(store *Store, context, instance string, logger *slog.Logger, clock aggregate.Clock) *Set {
	if logger == nil {
		logger = slog.Default()
	}
	if clock == nil {
		clock = aggregate.ClockFunc(time.Now)
	}
	s := &Set{store: store, instance: instance, logger: logger, clock: clock, breakers: map[Function]*Breaker{}}
	if store != nil {
		s.watcher = store.Watcher(context, logger, s.observe)
	}
	return s
}

// Breaker returns the breaker of f with policy p (resolved with
// Policy.Resolve: an invalid policy is an error matching
// ErrInvalidOption). Asking twice for one function returns the first.
func (s *Set) Breaker(f Function, p Policy) (*Breaker, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if !p.Off {
		var err error
		if p, err = p.Resolve(); err != nil {
			return nil, fmt.Errorf("function %s: %w", f, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.breakers[f]; ok {
		return b, nil
	}
	b := &Breaker{f: f, p: p, set: s, win: newWindow(p), state: New(f)}
	b.closed.Store(true)
	s.breakers[f] = b
	return b, nil
}

// Ready is closed once the set has read its circuits from the bucket (at
// once without a bucket).
func (s *Set) Ready() <-chan struct{} {
	if s.watcher == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.watcher.Ready()
}

// Run watches the circuits and flushes the refused counts until ctx ends,
// then flushes once more and returns nil.
func (s *Set) Run(ctx context.Context) error {
	if s.store == nil {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.watcher.Run(ctx) })
	wait.Every(ctx, DefaultFlushEvery, func() { s.Flush(ctx) })
	fctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	s.Flush(fctx)
	wg.Wait()
	return nil
}

// Flush adds the calls refused since the last flush to the circuits.
// Counts that cannot be written are kept for the next flush.
func (s *Set) Flush(ctx context.Context) {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	all := make([]*Breaker, 0, len(s.breakers))
	for _, b := range s.breakers {
		all = append(all, b)
	}
	s.mu.Unlock()
	for _, b := range all {
		n := b.refused.Swap(0)
		if n == 0 {
			continue
		}
		now := s.clock.Now()
		st, rev, _, err := s.store.Update(ctx, b.f, func(cur State) (State, bool) { return Evolve(cur, now, b.p, Refusals{N: n}) })
		if err != nil {
			b.refused.Add(n)
			s.logger.Debug("circuits: refused calls not flushed", "function", b.f.String(), "err", err)
			continue
		}
		b.observe(st, rev)
	}
}

func (s *Set) observe(st State, rev uint64) {
	s.mu.Lock()
	b := s.breakers[st.Function]
	s.mu.Unlock()
	if b != nil {
		b.observe(st, rev)
	}
}

// every runs a function at most once per interval.
type every struct {
	mu   sync.Mutex
	last time.Time
}

func (e *every) do(now time.Time, fn func()) {
	e.mu.Lock()
	due := e.last.IsZero() || now.Sub(e.last) >= 30*time.Second || now.Before(e.last)
	if due {
		e.last = now
	}
	e.mu.Unlock()
	if due {
		fn()
	}
}
