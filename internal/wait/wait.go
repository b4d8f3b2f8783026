// Package wait sleeps for a while unless a context ends first.
package wait

import (
	"context"
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
