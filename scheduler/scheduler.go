package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/index"
)

// DueSource lists the records due at now. *projection.Index satisfies it.
type DueSource interface {
	Due(now time.Time, limit int) []index.Due
}

// Executor runs a command on a record. *aggregate.Service satisfies it.
type Executor interface {
	Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error)
}

var (
	_ DueSource = (*projection.Index)(nil)
	_ Executor  = (*aggregate.Service)(nil)
)

// Scheduler prepares the compensation of due records. Every period the
// instance that holds the lease takes Due(now, batch) and sends
// PrepareCompensation for each record, as actor "scheduler", a bounded
// number at once. The other instances wait and take the lease over within
// one TTL of the holder's death (at once if it stops cleanly).
//
// A holder stops preparing a safety margin before its lease could expire,
// counted from when it sent its last successful renewal, so two instances
// never prepare at the same time. Each prepare also carries a command id
// derived from the record and its due time, so even a prepare sent twice
// for the same due time appends once.
//
// A Scheduler is safe for concurrent use; Run it once at a time.
type Scheduler struct {
	due    DueSource
	exec   Executor
	leases *Leases
	opts   options

	mu       sync.Mutex
	running  context.Context // Run's, for the passes of partitions
	active   context.Context // non-nil while this instance holds the lease
	deadline time.Time       // when the holder stops preparing
	since    time.Time       // when the server granted the current or last tenure

	backoff *backoffs

	passes, idle, prepared, rejected, duplicates, failed, skipped, acquired, lost, missing atomic.Uint64

	heldLast     atomic.Int64     // records left alone in the last pass (park.go)
	parkReleases parkReleaseStats // parkrelease.go
	drain        drains           // drain.go
	drainStats   drainStats
}

// Stats counts what a scheduler did since it was created.
type Stats struct {
	// Active reports whether this instance holds the lease now.
	Active bool
	// Passes counts passes run to the end as the holder; Idle counts ticks
	// while not the holder.
	Passes, Idle uint64
	// Prepared counts records prepared.
	Prepared uint64
	// Rejected counts prepares the aggregate refused because the record
	// moved on since the index saw it (a normal race, not an error).
	Rejected uint64
	// Duplicates counts prepares already applied for the same due time.
	Duplicates uint64
	// Missing counts due records the index listed that do not exist (a
	// wrong view): each backs off and is handed to the reprojector
	// (WithReprojector).
	Missing uint64
	// Failed counts prepares that failed for another reason (logged, at
	// most a few lines a minute). Such a record backs off: the passes skip
	// it for a time that doubles with each failure (WithFailureBackoff), so
	// it never keeps the records behind it from being prepared.
	Failed uint64
	// Skipped counts due records passes left out because they were backing
	// off; BackingOff is how many records are backing off or will be tried
	// again after a failure.
	Skipped    uint64
	BackingOff int
	// Acquired and Lost count lease acquisitions and losses.
	Acquired, Lost uint64
	// ActiveSince is when the current or last tenure began: the lease
	// clock's time once the server had granted the lease. Zero if never.
	ActiveSince time.Time
	// ValidUntil is when the current or last tenure's validity ends or
	// ended: the instance prepares nothing at or after it unless it renewed
	// the lease. Another instance is granted the lease only after the key
	// expired, TTL after the holder's last write, so its ActiveSince is
	// later than this by at least the safety margin.
	ValidUntil time.Time
	// Held is how many due records the last pass left alone because a
	// park-until-deploy rule parks them (WithParkRules), or their function's
	// circuit is open or its recovery drain has them (WithDrains).
	Held int
	// ParkReleases counts the deploy releases' progress (WithParkRelease).
	ParkReleases ParkReleaseStats
	// Drains counts the recovery drains' progress (WithDrains).
	Drains DrainStats
}

// New returns a scheduler that reads due records from due, sends commands
// through exec and elects its active instance in leases (see OpenLeases).
// Options that cannot be applied, or a renewal and margin that do not fit
// in the lease's TTL, return an error wrapping ErrInvalidOption. New does
// no I/O.
func New(due DueSource, exec Executor, leases *Leases, opts ...Option) (*Scheduler, error) {
	ttl := leases.TTL()
	o := options{
		period: DefaultPeriod, initialDelay: DefaultInitialDelay, batch: DefaultBatch, concurrency: DefaultConcurrency, rate: DefaultRate,
		clock: aggregate.ClockFunc(time.Now), leaseClock: aggregate.ClockFunc(time.Now),
		key: DefaultLeaseKey, instance: uuid.NewString(), renewEvery: ttl / 3, margin: ttl / 5, logger: slog.Default(),
		backoffMin: DefaultFailureBackoff, backoffMax: DefaultMaxFailureBackoff,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.renewEvery+o.margin >= ttl {
		return nil, fmt.Errorf("renew interval %s plus safety margin %s must be less than the lease TTL %s: %w", o.renewEvery, o.margin, ttl, ErrInvalidOption)
	}
	if o.backoffMin > o.backoffMax {
		return nil, fmt.Errorf("failure backoff %s must not exceed its maximum %s: %w", o.backoffMin, o.backoffMax, ErrInvalidOption)
	}
	return &Scheduler{due: due, exec: exec, leases: leases, opts: o, backoff: newBackoffs(o.backoffMin, o.backoffMax, o.logger)}, nil
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	active, since, until := s.active != nil, s.since, s.deadline
	s.mu.Unlock()
	return Stats{
		Active: active, ActiveSince: since, ValidUntil: until, Passes: s.passes.Load(), Idle: s.idle.Load(),
		Prepared: s.prepared.Load(), Rejected: s.rejected.Load(), Duplicates: s.duplicates.Load(), Failed: s.failed.Load(), Missing: s.missing.Load(),
		Skipped: s.skipped.Load(), BackingOff: s.backoff.extra(),
		Acquired: s.acquired.Load(), Lost: s.lost.Load(),
		Held: int(s.heldLast.Load()), ParkReleases: s.parkReleases.load(), Drains: s.drainStats.load(),
	}
}

// Run takes part in the election and, while it holds the lease, runs the
// passes, until ctx ends. It then releases the lease if it holds it and
// returns nil once every goroutine it started has stopped. Failures to
// reach NATS are logged and retried; they never end Run.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	s.running = ctx
	s.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { s.lead(ctx) })
	wg.Go(func() { s.tick(ctx) })
	if s.opts.drain != nil {
		wg.Go(func() { s.drainLoop(ctx) })
	}
	if s.opts.retention != nil {
		wg.Go(func() { s.retentionLoop(ctx) })
	}
	wg.Wait()
	return nil
}

// passing returns the context the passes prepare in, or nil if this
// instance has nothing to prepare: with partitions (WithPartitions), Run's
// while it holds a partition; else the current tenure's (holding).
func (s *Scheduler) passing() context.Context {
	if s.opts.partitions == nil {
		return s.holding()
	}
	if !s.opts.partitions.holdsAny() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// mine reports whether this instance's passes prepare d: with partitions,
// those of the partitions it holds; else every one.
func (s *Scheduler) mine(d index.Due) bool {
	return s.opts.partitions == nil || s.opts.partitions.Owns(d.Function.ProcessorName, d.ID)
}

// leads reports whether the work of processor that is not per record (its
// functions' drains and probes, its releases after a deploy) is this
// instance's: with partitions, while it holds the processor's first
// partition (Partitions.Leads); else while it holds the lease.
func (s *Scheduler) leads(processor string) bool {
	if s.opts.partitions == nil {
		return s.holding() != nil
	}
	return s.opts.partitions.Leads(processor)
}

// holding returns the context of the current tenure, or nil if this
// instance does not hold the lease or its validity has ended.
func (s *Scheduler) holding() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil || !s.opts.leaseClock.Now().Before(s.deadline) {
		return nil
	}
	return s.active
}
