package circuit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
)

// DefaultBucket is the KV bucket of the circuits, one key per function
// (Function.String).
const DefaultBucket = "amends_circuits"

// maxConflicts bounds the compare-and-set attempts of one Update.
const maxConflicts = 16

// Store keeps the circuits in a KV bucket: every read validates the
// stored value (DecodeState), every change is a compare-and-set on the
// key's revision. Safe for concurrent use.
//
// This file is the only one that reads or writes the bucket.
type Store struct {
	kv    jetstream.KeyValue
	js    jetstream.JetStream
	clock aggregate.Clock
}

// StoreOption configures OpenStore; one that cannot be applied makes OpenStore
// return an error matching ErrInvalidOption.
type StoreOption func(*storeOptions) error

type storeOptions struct {
	bucket   string
	replicas int
	storage  jetstream.StorageType
	clock    aggregate.Clock
}

// WithBucket names the bucket (default DefaultBucket).
func WithBucket(name string) StoreOption {
	return func(o *storeOptions) error {
		if name == "" {
			return fmt.Errorf("circuit bucket name is empty: %w", ErrInvalidOption)
		}
		o.bucket = name
		return nil
	}
}

// WithReplicas sets the replicas of a new bucket (default 1; 3 in a
// cluster).
func WithReplicas(n int) StoreOption {
	return func(o *storeOptions) error {
		if n < 1 || n > 5 {
			return fmt.Errorf("circuit bucket replicas must be from 1 to 5, got %d: %w", n, ErrInvalidOption)
		}
		o.replicas = n
		return nil
	}
}

// WithStorage sets the storage of a new bucket (default file).
func WithStorage(st jetstream.StorageType) StoreOption {
	return func(o *storeOptions) error { o.storage = st; return nil }
}

// WithClock sets the clock stored times are checked against (default the
// system clock).
func WithClock(c aggregate.Clock) StoreOption {
	return func(o *storeOptions) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		o.clock = c
		return nil
	}
}

// OpenStore returns the circuits bucket, creating it if it does not exist.
func OpenStore(ctx context.Context, js jetstream.JetStream, opts ...StoreOption) (*Store, error) {
	o := storeOptions{bucket: DefaultBucket, replicas: 1, storage: jetstream.FileStorage, clock: aggregate.ClockFunc(time.Now)}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if js == nil {
		return nil, fmt.Errorf("jetstream is nil: %w", ErrInvalidOption)
	}
	// A few revisions per key, so that a consumer of the bucket's stream
	// that lags (the notifier) still sees each transition's revision.
	cfg := jetstream.KeyValueConfig{Bucket: o.bucket, Description: "amends: circuits of the functions, shared by their instances",
		History: 16, Replicas: o.replicas, Storage: o.storage, MaxValueSize: MaxValue}
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, o.bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("circuit bucket %s: %w", o.bucket, err)
	}
	return &Store{kv: kv, js: js, clock: o.clock}, nil
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.kv.Bucket() }

// Stream returns the name of the bucket's stream, whose messages are the
// circuits' revisions (the notifier consumes it).
func (s *Store) Stream() string { return "KV_" + s.kv.Bucket() }

// Get returns f's circuit and its revision. Errors: ErrNotFound if f has
// none (it is closed), one matching ErrInvalid for a stored circuit that
// does not validate, or JetStream's.
func (s *Store) Get(ctx context.Context, f Function) (State, uint64, error) {
	if err := f.Validate(); err != nil {
		return State{}, 0, err
	}
	e, err := s.kv.Get(ctx, f.String())
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return State{}, 0, fmt.Errorf("circuit of %s: %w", f, ErrNotFound)
	case err != nil:
		return State{}, 0, fmt.Errorf("read the circuit of %s: %w", f, err)
	}
	st, err := DecodeState(e.Key(), e.Value(), s.clock.Now())
	if err != nil {
		return State{}, e.Revision(), fmt.Errorf("circuit of %s at revision %d: %w", f, e.Revision(), err)
	}
	return st, e.Revision(), nil
}

// List returns every stored circuit that validates, by key, and the
// errors of those that do not.
func (s *Store) List(ctx context.Context) ([]State, []error, error) {
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list the circuits: %w", err)
	}
	var out []State
	var bad []error
	for k := range keys.Keys() {
		f, err := ParseFunction(k)
		if err != nil {
			bad = append(bad, fmt.Errorf("key %.80q: %w", k, ErrInvalid))
			continue
		}
		st, _, err := s.Get(ctx, f)
		switch {
		case errors.Is(err, ErrNotFound):
		case errors.Is(err, ErrInvalid):
			bad = append(bad, err)
		case err != nil:
			return nil, nil, err
		default:
			out = append(out, st)
		}
	}
	return out, bad, nil
}

// Update changes f's circuit with change under compare-and-set: change
// gets the stored circuit (New(f) if there is none, or if the stored one
// does not validate, which the change then replaces) and returns the new
// one and whether it changed anything. A concurrent write makes Update
// read again and ask change again, up to a bound. It returns the circuit
// as stored, its revision and whether this call changed it. Errors:
// JetStream's, or one saying the conflicts did not end.
func (s *Store) Update(ctx context.Context, f Function, change func(State) (State, bool)) (State, uint64, bool, error) {
	if err := f.Validate(); err != nil {
		return State{}, 0, false, err
	}
	for attempt := 0; ; attempt++ {
		cur, rev, err := s.Get(ctx, f)
		switch {
		case errors.Is(err, ErrNotFound):
			cur = New(f)
		case errors.Is(err, ErrInvalid):
			cur = New(f)
		case err != nil:
			return State{}, 0, false, err
		}
		next, changed := change(cur)
		if !changed {
			return cur, rev, false, nil
		}
		next.Function = f
		if err := next.check(s.clock.Now()); err != nil {
			return cur, rev, false, fmt.Errorf("the new circuit of %s would not validate: %w", f, err)
		}
		b, err := json.Marshal(next)
		if err != nil {
			return cur, rev, false, err
		}
		var nrev uint64
		if rev == 0 {
			nrev, err = s.kv.Create(ctx, f.String(), b)
		} else {
			nrev, err = s.kv.Update(ctx, f.String(), b, rev)
		}
		if err == nil {
			return next, nrev, true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return cur, rev, false, fmt.Errorf("write the circuit of %s: %w", f, err)
		}
		if attempt >= maxConflicts {
			return cur, rev, false, fmt.Errorf("write the circuit of %s: %d concurrent changes in a row; try again: %w", f, attempt+1, err)
		}
	}
}

// Watch watches the circuits whose keys match pattern (">" for all, or
// "CONTEXT.>"), with their history so that kvwatch.Initial can read them
// completely.
func (s *Store) Watch(ctx context.Context, pattern string) (jetstream.KeyWatcher, error) {
	return s.kv.Watch(ctx, pattern, jetstream.IncludeHistory())
}

// Decode validates a circuit a watch (or a consumer of the bucket's
// stream) delivered, under key.
func (s *Store) Decode(key string, value []byte) (State, error) {
	return DecodeState(key, value, s.clock.Now())
}

// KV returns the bucket, for kvwatch.
func (s *Store) KV() jetstream.KeyValue { return s.kv }

// JetStream returns the JetStream the bucket is on.
func (s *Store) JetStream() jetstream.JetStream { return s.js }
