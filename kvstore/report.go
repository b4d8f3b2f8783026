package kvstore

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Recorder keeps a durable trace of invalid entries.
// *quarantine.Quarantine satisfies it: the entry is of kind "kv", its
// consumer the bucket, its stream and sequence the bucket's stream
// (KV_<bucket>) and the revision.
type Recorder interface {
	RecordKV(ctx context.Context, bucket, key string, revision uint64, cause error) error
}

// reportTimeout bounds one report to the Recorder.
const reportTimeout = 5 * time.Second

// logEvery is how often at most a bucket without a Recorder logs an
// invalid entry.
const logEvery = 10 * time.Second

// maxReported bounds the (key, revision) pairs remembered as reported.
const maxReported = 1 << 14

type seen struct {
	key string
	rev uint64
}

// reporter reports each invalid (key, revision) of a bucket once.
type reporter struct {
	bucket   string
	recorder Recorder
	logger   *slog.Logger
	now      func() time.Time

	mu         sync.Mutex
	reported   map[seen]bool
	total      uint64
	loggedAt   time.Time
	suppressed uint64
}

func newReporter(bucket string, r Recorder, l *slog.Logger, now func() time.Time) *reporter {
	return &reporter{bucket: bucket, recorder: r, logger: l, now: now, reported: map[seen]bool{}}
}

func (r *reporter) count() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// report records e unless this (key, revision) was recorded already. A
// report that fails is tried again the next time the entry is met.
func (r *reporter) report(ctx context.Context, e *InvalidError) {
	k := seen{e.Key, e.Revision}
	r.mu.Lock()
	if r.reported[k] {
		r.mu.Unlock()
		return
	}
	if len(r.reported) >= maxReported {
		clear(r.reported)
	}
	r.reported[k] = true
	r.total++
	r.mu.Unlock()
	var recordErr error
	if r.recorder != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
		defer cancel()
		recordErr = r.recorder.RecordKV(ctx, e.Bucket, e.Key, e.Revision, e)
		if recordErr == nil {
			return
		}
		r.mu.Lock()
		delete(r.reported, k) // next time again
		r.total--
		r.mu.Unlock()
	}
	now := r.now()
	r.mu.Lock()
	logNow := r.loggedAt.IsZero() || now.Sub(r.loggedAt) >= logEvery || now.Before(r.loggedAt)
	suppressed := r.suppressed
	if logNow {
		r.loggedAt, r.suppressed = now, 0
	} else {
		r.suppressed++
	}
	r.mu.Unlock()
	if !logNow {
		return
	}
	attrs := []any{"bucket", e.Bucket, "key", QuoteKey(e.Key), "revision", e.Revision, "field", e.Field, "reason", e.Reason, "alsoSkippedSinceLastLine", suppressed}
	if recordErr != nil {
		r.logger.Error("kvstore: invalid entry skipped; it could not be quarantined", append(attrs, "err", recordErr)...)
		return
	}
	r.logger.Error("kvstore: invalid entry skipped", attrs...)
}
