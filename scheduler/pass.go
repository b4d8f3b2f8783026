package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/projection/index"
)

// Actor is the actor the scheduler's commands carry.
const Actor = "scheduler"

// tick runs a pass on every tick until ctx ends: the configured ticks, or
// the initial delay and then every period.
func (s *Scheduler) tick(ctx context.Context) {
	ticks := s.opts.ticks
	if ticks == nil {
		t := time.NewTimer(s.opts.initialDelay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.pass()
		p := time.NewTicker(s.opts.period)
		defer p.Stop()
		ticks = p.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			s.pass()
		}
	}
}

// pass prepares the records due now, if this instance holds the lease: a
// batch, then, while more is due, batch after batch at the pass's rate
// (WithRate), until nothing more is due, a batch prepared nothing new (the
// index has not caught up), or a period passed (the next pass goes on). It
// returns when every prepare it sent has finished; the commands are
// canceled if the tenure ends.
func (s *Scheduler) pass() {
	active := s.passing()
	if active == nil {
		s.idle.Add(1)
		return
	}
	defer s.passes.Add(1)
	start := time.Now()
	now := s.opts.clock.Now()
	for {
		before := s.prepared.Load()
		n, more := s.round(active, now)
		if !more || s.prepared.Load() == before || s.passing() == nil || time.Since(start) >= s.opts.period {
			break
		}
		select {
		case <-active.Done():
		case <-time.After(time.Duration(float64(n) / s.opts.rate * float64(time.Second))):
		}
		now = s.opts.clock.Now()
	}
	s.parkReleaseStep(active, now)
}

// round prepares one batch of the records due at now and returns its
// size and whether more may be due.
func (s *Scheduler) round(active context.Context, now time.Time) (int, bool) {
	sem := make(chan struct{}, s.opts.concurrency)
	var wg sync.WaitGroup
	listed, complete := s.listDue(now)
	due, skipped := s.backoff.filter(listed, now, s.opts.batch, complete)
	s.skipped.Add(uint64(skipped))
	pctx, span := s.startPass(active, len(due))
	defer span.End()
send:
	for _, d := range due {
		select {
		case sem <- struct{}{}:
		case <-active.Done():
			break send
		}
		switch {
		case s.passing() == nil:
			<-sem
			break send // the lease ended: no command after its validity
		case !s.mine(d):
			// Its partition was given up since it was listed. (A slot
			// kept here was never given back: with partitions moving, a
			// pass blocked for good once as many records as it sends at
			// once had been skipped.)
			<-sem
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			s.prepare(pctx, now, d)
		})
	}
	wg.Wait()
	return len(due), !complete && len(due) == s.opts.batch
}

// prepare sends PrepareCompensation for d and counts the outcome. A record
// that fails for another reason than a rejection backs off from now.
func (s *Scheduler) prepare(ctx context.Context, now time.Time, d index.Due) {
	meta := aggregate.Meta{
		Actor:     Actor,
		Reason:    fmt.Sprintf("retry %d due at %s", d.Retries+1, time.UnixMilli(d.NextRetryAt).UTC().Format(time.RFC3339Nano)),
		CommandID: DueCommandID(d),
	}
	ctx, span := s.startPrepare(ctx, d)
	r, err := s.exec.Execute(ctx, d.ID, aggregate.PrepareCompensation{}, meta)
	endPrepare(span, err)
	switch {
	case err == nil && r.Duplicate:
		s.duplicates.Add(1)
		s.backoff.succeeded(d.ID)
	case err == nil:
		s.prepared.Add(1)
		s.backoff.succeeded(d.ID)
	case errors.Is(err, aggregate.ErrNotFound):
		// The index lists a record that does not exist: its view is wrong
		// (written by something else). It backs off, so that such views
		// never take a pass's batch, and is handed to the projector, which
		// deletes the view (or projects it again from its history).
		s.missing.Add(1)
		s.backoff.failed(d, now, fmt.Errorf("the index lists record %s, which does not exist; its view is projected again: %w", d.ID, err))
		if r := s.opts.reprojector; r != nil {
			if rerr := r.Reproject(ctx, d.ID); rerr != nil && ctx.Err() == nil {
				s.opts.logger.Warn("scheduler: the view of a record that does not exist could not be projected again", "record", d.ID, "err", rerr)
			}
		}
	case errors.Is(err, aggregate.ErrIllegalState):
		s.rejected.Add(1)
		s.backoff.succeeded(d.ID)
		s.opts.logger.Debug("scheduler: record moved on", "record", d.ID, "reason", err)
	case ctx.Err() != nil:
		// The tenure ended while the command was in flight: not a failure
		// of the record.
	default:
		s.failed.Add(1)
		s.backoff.failed(d, now, err)
	}
}

// DueCommandID is the command id of the prepare for due record d: one per
// record and due time (retry count and nextRetryAt), so preparing the
// same due time twice appends once.
func DueCommandID(d index.Due) string {
	return fmt.Sprintf("scheduler:%s:%d:%d", d.ID, d.Retries, d.NextRetryAt)
}
