package retention

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultBucket is the KV bucket of the retention sweeper: its
// progress under key "sweep" and the tallies of removed records, one key
// per (function, error code, fingerprint).
const DefaultBucket = "amends_retention"

const (
	sweepKey          = "sweep"
	tallyPrefix       = "tally."
	maxRetentionValue = 16 << 20
	// MaxBatch bounds the records of one sweep pass.
	MaxBatch      = 10000
	retentionSkew = 5 * time.Minute
)

// ErrInvalid reports a stored sweep state or tally that does not
// validate; the message names the field. An invalid sweep state halts the
// sweeper (nothing is removed) until it is repaired.
var ErrInvalid = errors.New("retention: invalid stored entry")

// SweepState is the sweeper's progress, stored under "sweep": the batches
// done and the one under way. A batch is written (with its archive's
// manifest) before any of its records is touched, so a sweeper that
// stops at any point finishes it when it starts again.
type SweepState struct {
	// Batch counts the batches done; the next one is Batch+1.
	Batch uint64 `json:"batch"`
	// Pending is the batch under way, nil between batches.
	Pending *SweepBatch `json:"pending,omitempty"`
	// Removed, Messages and Archived count, over all batches, the records
	// removed, their stream messages purged and the records archived.
	Removed  int64 `json:"removed"`
	Messages int64 `json:"messages"`
	Archived int64 `json:"archived"`
	// Last is the last batch done.
	Last *Report `json:"last,omitempty"`
	// UpdatedAt is when it was written, epoch ms.
	UpdatedAt int64 `json:"updatedAt"`
}

// SweepBatch is one batch of records to remove.
type SweepBatch struct {
	N         uint64 `json:"n"`
	StartedAt int64  `json:"startedAt"`
	// Archive and Manifest say where the records' histories were archived
	// ("" without an archive).
	Archive  string `json:"archive,omitempty"`
	Manifest string `json:"manifest,omitempty"`
	// Tallied is set once the records are counted in the tallies.
	Tallied bool      `json:"tallied,omitempty"`
	Records []Removal `json:"records"`
}

// Removal is a record a batch removes: its history through sequence
// Through, last at version Version.
type Removal struct {
	ID            string                 `json:"id"`
	Through       uint64                 `json:"through"`
	Version       uint64                 `json:"version"`
	Function      aggregate.FunctionInfo `json:"function"`
	ErrorCode     string                 `json:"errorCode,omitempty"`
	Fingerprint   string                 `json:"fingerprint,omitempty"`
	Status        aggregate.Status       `json:"status"`
	Unrecoverable bool                   `json:"unrecoverable,omitempty"`
	ExecuteAt     int64                  `json:"executeAt"`
}

// Report is what one batch did.
type Report struct {
	Batch uint64 `json:"batch"`
	// At is when it ended, epoch ms.
	At int64 `json:"at"`
	// Succeeded and Unrecoverable count the records removed by status.
	Succeeded     int `json:"succeeded"`
	Unrecoverable int `json:"unrecoverable"`
	// Messages counts the stream messages purged, Views the views deleted.
	Messages int `json:"messages"`
	Views    int `json:"views"`
	// Dropped counts records of the batch left alone because they moved
	// on after they were selected (they failed again).
	Dropped int `json:"dropped,omitempty"`
	// Archive and Manifest say where they were archived.
	Archive  string `json:"archive,omitempty"`
	Manifest string `json:"manifest,omitempty"`
}

// Removed is the number of records the batch removed.
func (r Report) Removed() int { return r.Succeeded + r.Unrecoverable }

// Tally counts the records of one (function, error code, fingerprint)
// that retention removed: what the summaries add to the records the index
// still has. LastBatch makes counting a batch idempotent.
type Tally struct {
	Function    aggregate.FunctionInfo `json:"function"`
	ErrorCode   string                 `json:"errorCode,omitempty"`
	Fingerprint string                 `json:"fingerprint,omitempty"`
	// Succeeded and Unrecoverable count the removed records by what they
	// were when removed.
	Succeeded     int64 `json:"succeeded"`
	Unrecoverable int64 `json:"unrecoverable"`
	// FirstAt and LastAt are the smallest and largest executeAt of them.
	FirstAt   int64  `json:"firstAt"`
	LastAt    int64  `json:"lastAt"`
	LastBatch uint64 `json:"lastBatch"`
}

// Total is the number of removed records the tally counts.
func (t Tally) Total() int64 { return t.Succeeded + t.Unrecoverable }

func tallyKey(f aggregate.FunctionInfo, code, fingerprint string) string {
	return kvstore.Hash(tallyPrefix, f.ContextName, f.ProcessorName, f.Name, code, fingerprint)
}

// Store is the sweeper's bucket through the typed KV layer: every read
// validated (DecodeSweepState, DecodeTally), an invalid entry quarantined.
// Safe for concurrent use.
type Store struct {
	sweep  *kvstore.Store[SweepState]
	tally  *kvstore.Store[Tally]
	bucket *kvstore.Bucket
}

// Option configures Open.
type Option func(*[]kvstore.Option)

// WithQuarantine records the entries that do not validate in r,
// the process's quarantine (default: a quarantine on js).
func WithQuarantine(r kvstore.Recorder) Option {
	return func(o *[]kvstore.Option) { *o = append(*o, kvstore.WithRecorder(r)) }
}

func retentionSpec(bucket string, replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: the retention sweeper's progress and the tallies of removed records",
		History: 5, Replicas: replicas, MaxValueSize: maxRetentionValue}, MaxValue: maxRetentionValue}
}

// Open returns the retention bucket (DefaultBucket if
// bucket is ""), creating it with replicas (1 if 0) if it does not exist.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, replicas int, opts ...Option) (*Store, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	if replicas == 0 {
		replicas = 1
	}
	if !bounds.Within(replicas, 1, 5) {
		return nil, fmt.Errorf("retention bucket replicas must be between 1 and 5, got %d: %w", replicas, ErrInvalidOption)
	}
	var kvo []kvstore.Option
	for _, o := range opts {
		o(&kvo)
	}
	b, err := kvstore.Open(ctx, js, retentionSpec(bucket, replicas), kvo...)
	if err != nil {
		return nil, fmt.Errorf("retention bucket: %w", err)
	}
	return &Store{bucket: b, sweep: kvstore.For(b, sweepCodec), tally: kvstore.For(b, tallyCodec)}, nil
}

// The retention bucket's codecs: the sweeper's state under sweepKey, the
// tallies under tallyKey.
var (
	sweepCodec = kvstore.Codec[SweepState]{Decode: func(e kvstore.Entry) (SweepState, error) { return DecodeSweepState(e.Key, e.Value, e.Now) }}
	tallyCodec = kvstore.Codec[Tally]{Decode: func(e kvstore.Entry) (Tally, error) { return DecodeTally(e.Key, e.Value, e.Now) }}
)

// State returns the sweeper's progress (the zero state before the first
// batch) and its revision. A stored state that does not validate is an
// error matching ErrInvalid (and kvstore's ErrInvalid).
func (r *Store) State(ctx context.Context) (SweepState, uint64, error) {
	st, rev, err := r.sweep.Get(ctx, sweepKey)
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return SweepState{}, 0, nil
	case errors.Is(err, kvstore.ErrInvalid):
		return SweepState{}, rev, fmt.Errorf("the sweep state at revision %d: %w: %w", rev, err, ErrInvalid)
	case err != nil:
		return SweepState{}, 0, fmt.Errorf("read the sweep state: %w", err)
	}
	return st, rev, nil
}

// putState writes st if the key is still at rev (0: absent); a lost race
// (another sweeper wrote) is an error matching kvstore's ErrConflict.
func (r *Store) putState(ctx context.Context, st SweepState, rev uint64, now time.Time) (uint64, error) {
	st.UpdatedAt = now.UnixMilli()
	if err := st.check(now); err != nil {
		return 0, fmt.Errorf("the sweep state would not validate: %w", err)
	}
	if rev == 0 {
		return r.sweep.Create(ctx, sweepKey, st)
	}
	return r.sweep.Update(ctx, sweepKey, st, rev)
}

// Tallies returns every stored tally that validates, and the errors of
// those that do not (quarantined, left out).
func (r *Store) Tallies(ctx context.Context) ([]Tally, []error, error) {
	var out []Tally
	var bad []error
	err := r.tally.Scan(ctx, tallyPrefix+">", func(key string, t Tally, _ uint64, err error) {
		if err != nil {
			bad = append(bad, fmt.Errorf("tally %s: %w: %w", kvstore.QuoteKey(key), err, ErrInvalid))
			return
		}
		out = append(out, t)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list the tallies: %w", err)
	}
	slices.SortFunc(out, func(a, b Tally) int {
		if c := cmp.Compare(b.Total(), a.Total()); c != 0 {
			return c
		}
		return cmp.Compare(a.Fingerprint, b.Fingerprint)
	})
	return out, bad, nil
}

// count adds batch n's records of one key to its tally, once: kvstore's
// compare-and-set loop, skipped if the tally has counted batch n. A
// tally that does not validate is replaced (it is quarantined; the
// removed records' count starts again from this batch) rather than halt
// the removals.
func (r *Store) count(ctx context.Context, n uint64, recs []Removal, now time.Time) error {
	first := recs[0]
	_, _, err := r.tally.Change(ctx, tallyKey(first.Function, first.ErrorCode, first.Fingerprint), func(cur kvstore.Current[Tally]) (Tally, kvstore.Action, error) {
		t := cur.Value
		if !cur.Exists() {
			t = Tally{Function: first.Function, ErrorCode: first.ErrorCode, Fingerprint: first.Fingerprint}
		}
		if t.LastBatch >= n {
			return t, kvstore.Keep, nil
		}
		for _, rec := range recs {
			if rec.Unrecoverable {
				t.Unrecoverable++
			} else {
				t.Succeeded++
			}
			if t.FirstAt == 0 || rec.ExecuteAt < t.FirstAt {
				t.FirstAt = rec.ExecuteAt
			}
			t.LastAt = max(t.LastAt, rec.ExecuteAt)
		}
		t.LastBatch = n
		if err := t.check(now); err != nil {
			return t, kvstore.Keep, err
		}
		return t, kvstore.Write, nil
	})
	return err
}

// DecodeSweepState reads the sweep state stored under key "sweep",
// validating every field at now: counts not negative, times not ahead of
// now by more than a few minutes, a pending batch numbered Batch+1 with 1
// to MaxBatch records, each a record id with a sequence and version
// from 1, a valid function and status SUCCEEDED or FAILED (unrecoverable),
// at most one removal per record. The error matches ErrInvalid
// and names the field.
func DecodeSweepState(key string, value []byte, now time.Time) (SweepState, error) {
	if key != sweepKey {
		return SweepState{}, badRetention("key", "the sweep state is stored under %q, not %s", sweepKey, kvstore.QuoteKey(key))
	}
	var st SweepState
	if err := json.Unmarshal(value, &st); err != nil {
		return SweepState{}, badRetention("", "not a sweep state in JSON: %v", err)
	}
	return st, st.check(now)
}

func (st *SweepState) check(now time.Time) error {
	latest := now.Add(retentionSkew).UnixMilli()
	if min(st.Removed, st.Messages, st.Archived) < 0 || st.Archived > st.Removed {
		return badRetention("removed", "counts must not be negative and archived at most removed, got removed %d, messages %d, archived %d", st.Removed, st.Messages, st.Archived)
	}
	if !bounds.Within(st.UpdatedAt, 0, latest) {
		return badRetention("updatedAt", "must be an epoch-ms time from 0 to %d, got %d", latest, st.UpdatedAt)
	}
	if st.Last != nil && (st.Last.Batch > st.Batch || st.Last.At < 0 || st.Last.At > latest) {
		return badRetention("last", "batch %d at %d is not a batch done by %d", st.Last.Batch, st.Last.At, latest)
	}
	if st.Pending == nil {
		return nil
	}
	return st.Pending.check(st.Batch, latest)
}

// check checks a pending batch: the one after batch done, started by
// latest, its records distinct and each valid.
func (b *SweepBatch) check(done uint64, latest int64) error {
	switch {
	case b.N != done+1:
		return badRetention("pending.n", "must be the next batch %d, got %d", done+1, b.N)
	case !bounds.Within(b.StartedAt, 1, latest):
		return badRetention("pending.startedAt", "must be an epoch-ms time from 1 to %d, got %d", latest, b.StartedAt)
	case len(b.Records) > MaxBatch:
		return badRetention("pending.records", "has %d records, over the limit of %d", len(b.Records), MaxBatch)
	case len(b.Archive) > 4096 || len(b.Manifest) > 256 || (b.Manifest == "") != (b.Archive == ""):
		return badRetention("pending.manifest", "archive and manifest are both set or both empty, short text")
	}
	seen := make(map[string]bool, len(b.Records))
	for i, rec := range b.Records {
		f := "pending.records[" + strconv.Itoa(i) + "]"
		if err := eventstore.ValidateID(f+".id", rec.ID); err != nil {
			return badRetention(f+".id", "%v", err)
		}
		if seen[rec.ID] {
			return badRetention(f+".id", "record %s is in the batch twice", rec.ID)
		}
		seen[rec.ID] = true
		if err := checkRemoval(f, &rec, latest); err != nil {
			return err
		}
	}
	return nil
}

func checkRemoval(f string, rec *Removal, latest int64) error {
	switch {
	case rec.Through == 0 || rec.Version == 0:
		return badRetention(f+".through", "sequence and version start at 1, got %d and %d", rec.Through, rec.Version)
	case rec.Status != aggregate.StatusSucceeded && !(rec.Status == aggregate.StatusFailed && rec.Unrecoverable):
		return badRetention(f+".status", "only SUCCEEDED and unrecoverable FAILED records are removed, got %.20q", rec.Status)
	case rec.ExecuteAt <= 0 || rec.ExecuteAt > latest:
		return badRetention(f+".executeAt", "must be an epoch-ms time from 1 to %d, got %d", latest, rec.ExecuteAt)
	}
	return checkGroup(f, rec.Function, rec.ErrorCode, rec.Fingerprint)
}

func checkGroup(f string, fn aggregate.FunctionInfo, code, fingerprint string) error {
	field := func(name string) string {
		if f == "" {
			return name
		}
		return f + "." + name
	}
	for _, p := range []struct{ name, v string }{{"function.contextName", fn.ContextName}, {"function.processorName", fn.ProcessorName}, {"function.name", fn.Name}} {
		if err := kvstore.Name(field(p.name), p.v, 256); err != nil {
			return fmt.Errorf("%w: %w", err, ErrInvalid)
		}
	}
	if err := kvstore.Text(field("errorCode"), code, 256, false); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if err := kvstore.Text(field("fingerprint"), fingerprint, 256, false); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return nil
}

// DecodeTally reads a tally stored under key, validating every field at
// now: the key is the hash of its function, error code and fingerprint;
// counts are not negative; times are not ahead of now. The error matches
// ErrInvalid and names the field.
func DecodeTally(key string, value []byte, now time.Time) (Tally, error) {
	var t Tally
	if err := json.Unmarshal(value, &t); err != nil {
		return Tally{}, badRetention("", "not a tally in JSON: %v", err)
	}
	if err := t.check(now); err != nil {
		return Tally{}, err
	}
	if want := tallyKey(t.Function, t.ErrorCode, t.Fingerprint); key != want {
		return Tally{}, badRetention("key", "%s is not the key of its function, code and fingerprint (%s)", kvstore.QuoteKey(key), want)
	}
	return t, nil
}

func (t *Tally) check(now time.Time) error {
	latest := now.Add(retentionSkew).UnixMilli()
	switch {
	case t.Succeeded < 0 || t.Unrecoverable < 0:
		return badRetention("succeeded", "counts must not be negative, got %d and %d", t.Succeeded, t.Unrecoverable)
	case t.FirstAt < 0 || !bounds.Within(t.LastAt, t.FirstAt, latest):
		return badRetention("firstAt", "firstAt %d and lastAt %d must be epoch-ms times in order, up to %d", t.FirstAt, t.LastAt, latest)
	}
	return checkGroup("", t.Function, t.ErrorCode, t.Fingerprint)
}

// badRetention is a refusal naming field (a *kvstore.FieldError, so the
// bucket's InvalidError names it too) that matches ErrInvalid.
func badRetention(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", kvstore.Invalid(field, format, args...), ErrInvalid)
}
