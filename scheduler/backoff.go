package scheduler

import (
	"log/slog"
	"sync"
	"time"

	"github.com/amends-dev/amends/projection/index"
)

// Defaults of the backoff of a record the scheduler cannot prepare.
const (
	DefaultFailureBackoff    = time.Minute
	DefaultMaxFailureBackoff = time.Hour
	// failureLogWindow and failureLogBurst bound the WARN lines of failed
	// prepares: at most failureLogBurst per window of the pass clock, then
	// one line saying how many were left out.
	failureLogWindow = time.Minute
	failureLogBurst  = 10
)

// failing is the backoff of one record whose prepare failed: it is skipped
// until until. version is the record's version in the index when it last
// failed: a record that moved on since starts afresh.
type failing struct {
	version  uint64
	failures int
	until    time.Time
}

// backoffs holds the records the scheduler cannot prepare and limits the
// log lines of their failures. Safe for concurrent use.
type backoffs struct {
	min, max time.Duration
	logger   *slog.Logger

	mu         sync.Mutex
	records    map[string]failing
	window     time.Time // start of the current log window
	logged     int       // lines logged in the window
	suppressed int       // lines left out in the window
}

func newBackoffs(min, max time.Duration, logger *slog.Logger) *backoffs {
	return &backoffs{min: min, max: max, logger: logger, records: map[string]failing{}}
}

// extra is how many more records than the batch a pass asks the index for:
// one per record backing off, so that skipping them still leaves a full
// batch of others when there are that many.
func (b *backoffs) extra() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.records)
}

// filter returns up to batch records of due that are not backing off at
// now, and forgets the records that moved on: a new version, or no longer
// due (only known when due holds every due record, complete).
func (b *backoffs) filter(due []index.Due, now time.Time, batch int, complete bool) (out []index.Due, skipped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := make(map[string]struct{}, len(b.records))
	for _, d := range due {
		f, ok := b.records[d.ID]
		if ok && f.version != d.Version {
			delete(b.records, d.ID)
			ok = false
		}
		if ok {
			seen[d.ID] = struct{}{}
			if now.Before(f.until) {
				skipped++
				continue
			}
		}
		if len(out) < batch {
			out = append(out, d)
		}
	}
	if complete {
		for id := range b.records {
			if _, ok := seen[id]; !ok {
				delete(b.records, id)
			}
		}
	}
	return out, skipped
}

// failed counts a failed prepare of d at now: the record is skipped for
// min·2^(failures−1), capped at max. It logs the failure at WARN unless the
// window's burst is spent.
func (b *backoffs) failed(d index.Due, now time.Time, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.records[d.ID]
	if f.version != d.Version {
		f = failing{version: d.Version}
	}
	f.failures++
	wait := b.max
	if shift := f.failures - 1; shift < 62 && b.min<<shift > 0 && b.min<<shift < b.max {
		wait = b.min << shift
	}
	f.until = now.Add(wait)
	b.records[d.ID] = f
	if now.Sub(b.window) >= failureLogWindow || now.Before(b.window) {
		if b.suppressed > 0 {
			b.logger.Warn("scheduler: more prepares failed; their log lines were left out", "count", b.suppressed, "window", failureLogWindow)
		}
		b.window, b.logged, b.suppressed = now, 0, 0
	}
	if b.logged >= failureLogBurst {
		b.suppressed++
		return
	}
	b.logged++
	b.logger.Warn("scheduler: prepare failed; backing off", "record", d.ID, "failures", f.failures, "retryAfter", wait, "err", err)
}

// succeeded forgets the backoff of a record that was prepared or rejected.
func (b *backoffs) succeeded(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.records, id)
}
