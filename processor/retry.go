package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/wait"
)

// Retry is an immediate retry policy: how often a RECOVERABLE failure is
// retried in process before it is recorded. The zero Retry retries never.
type Retry struct {
	// Retries is how many times a failure is retried after the first call.
	Retries int
	// Backoff computes the wait before each retry.
	Backoff Backoff
}

// DefaultRetry is the reference's immediate retry (Reactor's
// Retry.backoff(3, 2s)): 3 retries, 2 s doubling, jitter 0.5.
var DefaultRetry = Retry{Retries: 3, Backoff: Backoff{Min: 2 * time.Second, Jitter: 0.5}}

func (r Retry) validate() error {
	if r.Retries < 0 {
		return fmt.Errorf("immediate retries must be >= 0, got %d", r.Retries)
	}
	if r.Retries > 0 {
		return r.Backoff.validate()
	}
	return nil
}

// Backoff is an exponential backoff: retry n (0-based) waits Min·2^n,
// capped at Max (0: no cap), spread by ±Jitter of itself (0 to 1), as
// Reactor's backoff does.
type Backoff struct {
	Min    time.Duration
	Max    time.Duration
	Jitter float64
}

func (b Backoff) validate() error {
	switch {
	case b.Min < 0:
		return fmt.Errorf("backoff min must be >= 0, got %s", b.Min)
	case b.Max < 0 || (b.Max > 0 && b.Max < b.Min):
		return fmt.Errorf("backoff max must be 0 (no cap) or >= min %s, got %s", b.Min, b.Max)
	case !bounds.Within(b.Jitter, 0, 1):
		return fmt.Errorf("backoff jitter must be between 0 and 1, got %g", b.Jitter)
	}
	return nil
}

// Delay returns the wait before retry n (0-based).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Min
	for i := 0; i < n && d < 1<<40; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 && d > 0 {
		spread := float64(d) * b.Jitter
		d += time.Duration((rand.Float64()*2 - 1) * spread)
		if b.Max > 0 && d > b.Max {
			d = b.Max
		}
	}
	return max(d, 0)
}

// Sleeper waits for d or until ctx ends, returning ctx's error then.
// Tests inject one that returns at once.
type Sleeper func(ctx context.Context, d time.Duration) error

// Sleep is the real Sleeper.
func Sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }
