// Package wait sleeps for a while unless a context ends first.
package wait

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Sleep waits for d, or returns ctx's error as soon as ctx ends. A d of 0
// or less returns at once (ctx's error if it has ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until calls ok, then every d until it returns true, and returns nil;
// ctx's error once ctx ends; or, once limit has passed, an error that
// says what was waited for. ok runs on the caller's goroutine.
func Until(ctx context.Context, what string, d, limit time.Duration, ok func() bool) error {
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, limit)
		}
		if err := Sleep(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// Every calls f every d until ctx ends, the first time d after the call;
// it returns when ctx ends, once f has returned. f runs on the caller's
// goroutine.
func Every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Restart calls run until ctx ends. When run returns while ctx is live,
// failed gets its error, the attempt (from 1) and the backoff; Restart
// then waits the backoff and calls run again. The backoff starts at lo and
// doubles up to hi; it starts over, as does the attempt count, after a
// run that lasted longer than hi (it was working). failed returning false
// ends Restart (an error that can never go away). run and failed are
// called on the caller's goroutine.
func Restart(ctx context.Context, lo, hi time.Duration, run func(context.Context) error, failed func(err error, attempt int, backoff time.Duration) bool) {
	backoff := lo
	for attempt := 1; ; attempt++ {
		started := time.Now()
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > hi {
			backoff, attempt = lo, 1
		}
		if !failed(err, attempt, backoff) || Sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, hi)
	}
}

// Backoff sleeps before retry n (1-based) of a lost compare-and-set race:
// a random wait of up to 1 ms·2^n (at most 50 ms), plus 1 ms, so that the
// writers that collided spread out and a replica that lags behind catches
// up. It returns ctx's error if ctx ends first.
func Backoff(ctx context.Context, n int) error {
	d := min(time.Millisecond<<min(n, 16), 50*time.Millisecond)
	return Sleep(ctx, rand.N(d)+time.Millisecond)
}
