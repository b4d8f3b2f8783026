package scheduler

import (
	"context"
	"errors"

	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/retention"
)

// WithRetention runs sw's passes while this instance holds the lease,
// every retention.Config.Every (or on its Ticks), once the record source
// has loaded (a source with a Ready channel, as *projection.Index). A
// pass runs with the tenure's context, so losing the lease stops it at
// its next step; what it leaves, the next holder finishes.
func WithRetention(sw *retention.Sweeper) Option {
	return func(o *options) error { o.retention = sw; return notNil("sweeper", sw) }
}

// Retention returns the sweeper of WithRetention, nil without one.
func (s *Scheduler) Retention() *retention.Sweeper { return s.opts.retention }

// retentionLoop runs the sweeper's passes until ctx ends.
func (s *Scheduler) retentionLoop(ctx context.Context) {
	sw := s.opts.retention
	ticks, stop := sw.Pace()
	defer stop()
	last := "" // the last error logged: the same one is logged once
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		active := s.holding()
		if active == nil || !loaded(sw.Records()) {
			continue
		}
		rep, err := sw.Sweep(active)
		switch {
		case err != nil && active.Err() == nil:
			if err.Error() == last {
				continue
			}
			last = err.Error()
			msg := "retention: a sweep failed; the next one takes it up"
			switch {
			case errors.Is(err, retention.ErrInvalid):
				msg = "retention: halted: the stored sweep state is invalid; repair it (amends quarantine list, amends repair purge-entry)"
			case errors.Is(err, jsstore.ErrRemovalDenied):
				msg = "retention: nothing is removed until the compensation stream is migrated (docs/retention.md)"
			}
			s.opts.logger.Warn(msg, "err", err)
		case err == nil:
			last = ""
		}
		if err == nil && rep.Batch != 0 {
			s.opts.logger.Debug("retention: sweep batch done", "batch", rep.Batch, "removed", rep.Removed())
		}
	}
}
