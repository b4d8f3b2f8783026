package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/projection"
)

// Retention defaults and bounds.
const (
	// DefaultRetention is how long a SUCCEEDED record is kept after its
	// success when retention is on (amends serve --retention): 30 days,
	// a month of "what happened to that order last week" for operators,
	// and past the usual 14-30 day window of traces and logs that would
	// explain a record, while a record's 10 KB or so of history does not
	// pile up for ever.
	DefaultRetention = 30 * 24 * time.Hour
	// MinRetention bounds a retention from below: a record younger than
	// an hour may still be looked at from the alert that announced it.
	MinRetention = time.Hour
	// MaxRetention bounds it from above (ten years).
	MaxRetention = 10 * 365 * 24 * time.Hour
	// DefaultBatch and DefaultEvery pace the sweeper: at most
	// 500 records a minute, about 720 k a day, a small share of what
	// one JetStream server purges (docs/retention.md has the figures).
	DefaultBatch = 500
	DefaultEvery = time.Minute
)

// Records lists the records the sweeper may remove;
// *projection.Index satisfies it.
type Records interface {
	List(q api.Query) (api.Page, error)
}

// RecordStore reads and removes record histories; *jsstore.Store
// satisfies it.
type RecordStore interface {
	LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error)
	Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error)
	Remove(ctx context.Context, a eventstore.AggregateID, through uint64) (uint64, error)
}

// Auditor records an audit entry; *audit.Log satisfies it.
type Auditor interface {
	Record(ctx context.Context, e api.AuditEntry) error
}

var _ Records = (*projection.Index)(nil)

// Config configures a Sweeper. Zero durations and counts take the
// defaults, except Succeeded and Unrecoverable, where 0 means "keep".
type Config struct {
	// Succeeded is how long a SUCCEEDED record is kept after its success
	// (its executeAt); 0 keeps them.
	Succeeded time.Duration
	// Unrecoverable is how long a FAILED record classified UNRECOVERABLE
	// is kept after its last failure; 0 keeps them. amends has no
	// "resolved" or "acknowledged" state: an unrecoverable record is the
	// one the scheduler never retries, the closest to finished.
	Unrecoverable time.Duration
	// Batch is the most records one pass removes (DefaultBatch), at
	// most MaxBatch; Every the time between passes
	// (DefaultEvery), or Ticks drives them.
	Batch int
	Every time.Duration
	Ticks <-chan time.Time
	// Records lists the records (required), Store reads and removes
	// their histories (required), Views is the views bucket (required).
	Records Records
	Store   RecordStore
	Views   *projection.Views
	// Progress keeps the progress and the tallies (required;
	// Open).
	Progress *Store
	// Archive, if set, gets every removed record's history first.
	Archive archive.Sink
	// Audit, if set, gets an entry per batch.
	Audit Auditor
	// Reprojector, if set, gets the records the index lists whose
	// history is gone (their view is of nothing).
	Reprojector projection.Reprojector
	// Clock gives "now" (default the system clock); Logger logs.
	Clock  aggregate.Clock
	Logger *slog.Logger
}

// Sweeper removes finished records past their retention: it lists them
// from the index, reads each one's last stream to check it is still
// finished and old, archives their histories if it has an archive,
// records the batch in its progress, counts the records in the tallies,
// purges their histories from the compensation stream and deletes their
// views (so that the index drops them). Every step can be run again:
// a batch interrupted at any point is finished by the next Sweep, and
// nothing is removed before the batch, with its archive, is stored.
//
// Run it on the active scheduler only (WithRetention), or call Sweep
// directly. A Sweeper is safe for concurrent use, but Sweeps run one at a
// time.
type Sweeper struct {
	cfg Config
	mu  sync.Mutex // one Sweep at a time

	hook func(step string) error // tests: fail or stop at a step

	// used is the highest batch number known to be used (by the tallies
	// and this sweeper's batches), read once:
	// the stored counter is derived state and may have gone back.
	used     uint64
	usedRead bool

	stats sweepStats
}

// Pace returns the ticks that pace the sweeper's passes: Config.Ticks, or
// a ticker of Config.Every that stop stops.
func (sw *Sweeper) Pace() (ticks <-chan time.Time, stop func()) {
	if sw.cfg.Ticks != nil {
		return sw.cfg.Ticks, func() {}
	}
	t := time.NewTicker(sw.cfg.Every)
	return t.C, t.Stop
}

// Records returns the record source the sweeper lists from.
func (sw *Sweeper) Records() Records { return sw.cfg.Records }

// Archive returns the archive the sweeper writes removed histories to;
// nil when it archives nothing.
func (sw *Sweeper) Archive() archive.Sink { return sw.cfg.Archive }

type sweepStats struct {
	passes, batches, succeeded, unrecoverable, messages, views, archived, dropped, failed, halted atomic.Uint64
	lastAt                                                                                        atomic.Int64
}

// Stats counts what a Sweeper did since it was created.
type Stats struct {
	Passes, Batches          uint64
	Succeeded, Unrecoverable uint64
	Messages, Views          uint64
	Archived, Dropped        uint64
	// Failed counts passes that failed (logged); Halted those that found
	// the progress invalid and removed nothing.
	Failed, Halted uint64
	// LastAt is when the last batch ended.
	LastAt time.Time
}

// New returns a sweeper of cfg. A missing required field, or a
// value out of bounds, is an error wrapping ErrInvalidOption that names
// it.
func New(cfg Config) (*Sweeper, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidOption)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"retention of succeeded records", cfg.Succeeded}, {"retention of unrecoverable records", cfg.Unrecoverable}} {
		if d.v != 0 && !bounds.Within(d.v, MinRetention, MaxRetention) {
			return nil, bad("%s must be 0 (keep) or from %s to %s, got %s", d.name, MinRetention, MaxRetention, d.v)
		}
	}
	cfg.Batch = cmp.Or(cfg.Batch, DefaultBatch)
	cfg.Every = cmp.Or(cfg.Every, DefaultEvery)
	switch {
	case !bounds.Within(cfg.Batch, 1, MaxBatch):
		return nil, bad("batch must be from 1 to %d records, got %d", MaxBatch, cfg.Batch)
	case !bounds.Within(cfg.Every, time.Second, 24*time.Hour):
		return nil, bad("the time between sweeps must be from 1s to 24h, got %s", cfg.Every)
	case cfg.Records == nil:
		return nil, bad("no record source")
	case cfg.Store == nil:
		return nil, bad("no record store")
	case cfg.Views == nil:
		return nil, bad("no views bucket")
	case cfg.Progress == nil:
		return nil, bad("no progress bucket")
	}
	cfg.Clock = cmp.Or[aggregate.Clock](cfg.Clock, aggregate.ClockFunc(time.Now))
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Sweeper{cfg: cfg}, nil
}

// Stats returns the sweeper's counters.
func (sw *Sweeper) Stats() Stats {
	s := &sw.stats
	st := Stats{Passes: s.passes.Load(), Batches: s.batches.Load(), Succeeded: s.succeeded.Load(), Unrecoverable: s.unrecoverable.Load(),
		Messages: s.messages.Load(), Views: s.views.Load(), Archived: s.archived.Load(), Dropped: s.dropped.Load(), Failed: s.failed.Load(), Halted: s.halted.Load()}
	if ms := s.lastAt.Load(); ms != 0 {
		st.LastAt = time.UnixMilli(ms)
	}
	return st
}

// Tallies returns the counts of the records retention removed, per
// function, error code and fingerprint (see Retention.Tallies).
func (sw *Sweeper) Tallies(ctx context.Context) ([]Tally, error) {
	t, _, err := sw.cfg.Progress.Tallies(ctx)
	return t, err
}

// Sweep runs one pass: it finishes the batch under way if there is one,
// or else selects, archives and removes a new batch of at most Batch
// records. It returns what the batch did (Batch 0: nothing to do). A
// stored progress that does not validate halts it: the error matches
// ErrInvalid and nothing is removed until the entry is repaired
// (amends repair purge-entry). Other errors are the store's, the
// archive's or the buckets'; the pass can simply be run again.
func (sw *Sweeper) Sweep(ctx context.Context) (Report, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.stats.passes.Add(1)
	rep, err := sw.sweep(ctx)
	switch {
	case errors.Is(err, ErrInvalid):
		sw.stats.halted.Add(1)
	case err != nil:
		sw.stats.failed.Add(1)
	}
	return rep, err
}

// SweepAll runs passes until one has nothing to remove, or ctx ends: the
// whole backlog at once, for a benchmark or a one-off clean-up. It
// returns the batches' reports.
func (sw *Sweeper) SweepAll(ctx context.Context) ([]Report, error) {
	var out []Report
	for ctx.Err() == nil {
		rep, err := sw.Sweep(ctx)
		if err != nil {
			return out, err
		}
		if rep.Batch == 0 {
			return out, nil
		}
		out = append(out, rep)
	}
	return out, ctx.Err()
}

func (sw *Sweeper) step(name string) error {
	if sw.hook != nil {
		return sw.hook(name)
	}
	return nil
}

func (sw *Sweeper) sweep(ctx context.Context) (Report, error) {
	st, rev, err := sw.cfg.Progress.State(ctx)
	if err != nil {
		return Report{}, err
	}
	if st.Pending == nil && sw.cfg.Succeeded == 0 && sw.cfg.Unrecoverable == 0 {
		return Report{}, nil // off; a batch under way is still finished
	}
	if st.Pending == nil {
		n, err := sw.nextBatch(ctx, st)
		if err != nil {
			return Report{}, err
		}
		b, err := sw.select_(ctx, n)
		if err != nil || b == nil {
			return Report{}, err
		}
		st.Batch = n - 1
		if err := sw.archive(ctx, b); err != nil {
			return Report{}, err
		}
		if err := sw.step("archived"); err != nil {
			return Report{}, err
		}
		st.Pending = b
		if rev, err = sw.cfg.Progress.putState(ctx, st, rev, sw.cfg.Clock.Now()); err != nil {
			return Report{}, fmt.Errorf("record sweep batch %d: %w", b.N, err)
		}
		if err := sw.step("pending"); err != nil {
			return Report{}, err
		}
	}
	return sw.finish(ctx, st, rev)
}

// nextBatch returns the number of the next batch: one past the stored
// counter, or past the highest number already used when the counter went
// back (an entry reset to {} or forged), so that a number never repeats:
// a repeated number would skip the tallies (counted per batch) and
// overwrite the archive's manifest of that number. A batch removes
// nothing before it is tallied, so the tallies know every number that
// removed anything; an archived manifest of a higher number removed
// nothing (the pass stopped before the batch was stored) and is written
// again.
func (sw *Sweeper) nextBatch(ctx context.Context, st SweepState) (uint64, error) {
	if !sw.usedRead {
		ts, _, err := sw.cfg.Progress.Tallies(ctx)
		if err != nil {
			return 0, err
		}
		for _, t := range ts {
			sw.used = max(sw.used, t.LastBatch)
		}
		sw.usedRead = true
	}
	if st.Last != nil {
		sw.used = max(sw.used, st.Last.Batch)
	}
	if st.Batch < sw.used {
		sw.cfg.Logger.Warn("retention: the stored sweep counter is behind the batches already done (the entry was reset or edited); numbering goes on after them",
			"stored", st.Batch, "done", sw.used)
		return sw.used + 1, nil
	}
	return st.Batch + 1, nil
}
