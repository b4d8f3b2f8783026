package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/retention"
)

// footprintRetention is the retention period the footprint's sweep
// applies, and footprintAge how long ago the footprint's records are
// made: older than the period, so that the sweep, at the real time,
// finds every one of them due for removal.
const (
	footprintRetention = 30 * 24 * time.Hour
	footprintAge       = footprintRetention + 24*time.Hour
)

// footprintClock is the clock the footprint's records are made on: the
// real time, footprintAge ago.
func footprintClock() aggregate.Clock {
	return aggregate.ClockFunc(func() time.Time { return time.Now().Add(-footprintAge) })
}

// SweepRetention is the RetentionFunc of amends bench footprint: the
// sweep serve runs (retention.Sweeper with a retention of 30 days for
// SUCCEEDED records and no archive), over an index of the target's views
// and a progress bucket of its own (named after env.Prefix, deleted
// afterwards), run until it has nothing left to remove. It returns an
// error if the sweep fails or removes fewer records than the target
// holds (the records are made footprintAge ago, so every one is due).
func SweepRetention(env *Env) RetentionFunc {
	return func(ctx context.Context, t RetentionTarget) error {
		discard := slog.New(slog.NewTextHandler(io.Discard, nil))
		ix, err := projection.NewIndex(t.Views, t.Store, projection.WithIndexLogger(discard))
		if err != nil {
			return err
		}
		ictx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ix.Run(ictx) }()
		defer func() { stop(); <-done }()
		select {
		case <-ix.Ready():
		case err := <-done:
			done <- err
			return fmt.Errorf("the index of the records: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
		bucket := "bench_" + env.Prefix + "_retention"
		progress, err := retention.Open(ctx, t.JS, bucket, 1)
		if err != nil {
			return err
		}
		defer func() { _ = t.JS.DeleteKeyValue(context.Background(), bucket) }()
		sw, err := retention.New(retention.Config{
			Succeeded: footprintRetention, Batch: retention.MaxBatch, Every: time.Minute,
			Records: ix, Store: t.Store, Views: t.Views, Progress: progress, Logger: discard,
		})
		if err != nil {
			return err
		}
		reports, err := sw.SweepAll(ctx)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		removed := 0
		for _, r := range reports {
			removed += r.Succeeded + r.Unrecoverable
		}
		if removed != len(t.Records) {
			return fmt.Errorf("the sweep removed %d of the %d records, all past their retention", removed, len(t.Records))
		}
		return nil
	}
}
