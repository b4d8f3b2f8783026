package circuit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultBucket is the KV bucket of the circuits, one key per function
// (Function.String).
const DefaultBucket = "amends_circuits"

// Store keeps the circuits in a KV bucket through the engine's typed KV
// layer (kvstore): every read validates the stored value
// (DecodeState; one that does not is quarantined), every change is a
// compare-and-set on the key's revision (kvstore's Change). Safe for
// concurrent use.
type Store struct {
	store *kvstore.Store[State]
	js    jetstream.JetStream
	now   func() time.Time
}

// StoreOption configures OpenStore; one that cannot be applied makes
// OpenStore return an error matching ErrInvalidOption.
type StoreOption func(*storeOptions) error

type storeOptions struct {
	bucket   string
	replicas int
	storage  jetstream.StorageType
	now      func() time.Time
	kv       []kvstore.Option
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
		if !bounds.Within(n, 1, 5) {
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
		o.now = c.Now
		return nil
	}
}

// WithQuarantine records the stored circuits that do not validate in r
// (the process's quarantine; default: a quarantine on the bucket's
// JetStream).
func WithQuarantine(r kvstore.Recorder) StoreOption {
	return func(o *storeOptions) error { o.kv = append(o.kv, kvstore.WithRecorder(r)); return nil }
}

// Spec is the circuits bucket's: a few revisions per key, so that a
// consumer of the bucket's stream that lags (the notifier) still sees each
// transition's revision.
func Spec(bucket string, replicas int, storage jetstream.StorageType) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: circuits of the functions, shared by their instances",
		History: 16, Replicas: replicas, Storage: storage, MaxValueSize: MaxValue}, MaxValue: MaxValue}
}

var codec = kvstore.Codec[State]{Decode: func(e kvstore.Entry) (State, error) { return DecodeState(e.Key, e.Value, e.Now) }}

// OpenStore returns the circuits bucket, creating it if it does not exist.
func OpenStore(ctx context.Context, js jetstream.JetStream, opts ...StoreOption) (*Store, error) {
	o := storeOptions{bucket: DefaultBucket, replicas: 1, storage: jetstream.FileStorage, now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if js == nil {
		return nil, fmt.Errorf("jetstream is nil: %w", ErrInvalidOption)
	}
	b, err := kvstore.Open(ctx, js, Spec(o.bucket, o.replicas, o.storage), append(o.kv, kvstore.WithClock(o.now))...)
	if err != nil {
		return nil, fmt.Errorf("circuit bucket: %w", err)
	}
	return &Store{store: kvstore.For(b, codec), js: js, now: o.now}, nil
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.store.Name() }

// Stream returns the name of the bucket's stream, whose messages are the
// circuits' revisions (the notifier consumes it).
func (s *Store) Stream() string { return "KV_" + s.store.Name() }

// invalidStored turns kvstore's refusal of a stored circuit into one matching
// ErrInvalid too.
func invalidStored(f Function, err error) error {
	return fmt.Errorf("circuit of %s: %w: %w", f, err, ErrInvalid)
}

// Get returns f's circuit and its revision. Errors: ErrNotFound if f has
// none (it is closed), one matching ErrInvalid (and kvstore's) for a
// stored circuit that does not validate, which is quarantined, or
// JetStream's.
func (s *Store) Get(ctx context.Context, f Function) (State, uint64, error) {
	if err := f.Validate(); err != nil {
		return State{}, 0, err
	}
	st, rev, err := s.store.Get(ctx, f.String())
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return State{}, 0, fmt.Errorf("circuit of %s: %w", f, ErrNotFound)
	case errors.Is(err, kvstore.ErrInvalid):
		return State{}, rev, invalidStored(f, err)
	case err != nil:
		return State{}, 0, fmt.Errorf("read the circuit of %s: %w", f, err)
	}
	return st, rev, nil
}

// List returns every stored circuit that validates, by function, and the
// errors of those that do not.
func (s *Store) List(ctx context.Context) ([]State, []error, error) {
	return listByFunction(ctx, s.store, "circuit", ErrInvalid, func(st State) Function { return st.Function })
}

// listByFunction returns every value of store that validates, sorted by
// its function (fn), and the errors of those that do not (naming the key
// and wrapping invalid); what names the kind of value.
func listByFunction[T any](ctx context.Context, store *kvstore.Store[T], what string, invalid error, fn func(T) Function) ([]T, []error, error) {
	var out []T
	var bad []error
	err := store.Scan(ctx, ">", func(key string, v T, _ uint64, err error) {
		if err != nil {
			bad = append(bad, fmt.Errorf("%s %s: %w: %w", what, kvstore.QuoteKey(key), err, invalid))
			return
		}
		out = append(out, v)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list the %ss: %w", what, err)
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(fn(a).String(), fn(b).String()) })
	return out, bad, nil
}

// Update changes f's circuit with change under compare-and-set: change
// gets the stored circuit (New(f) if there is none, or if the stored one
// does not validate, which the change then replaces) and returns the new
// one and whether it changed anything. A concurrent write makes Update
// read again and ask change again (kvstore's Change). It returns the
// circuit as stored, its revision and whether this call changed it.
// Errors: JetStream's, kvstore's (a conflict that did not end, a value too
// large), or one matching ErrInvalid for a change that would not
// validate.
func (s *Store) Update(ctx context.Context, f Function, change func(State) (State, bool)) (State, uint64, bool, error) {
	if err := f.Validate(); err != nil {
		return State{}, 0, false, err
	}
	var base State
	var changed bool
	st, rev, err := s.store.Change(ctx, f.String(), func(cur kvstore.Current[State]) (State, kvstore.Action, error) {
		base = New(f)
		if cur.Exists() {
			base = cur.Value
		}
		next, ok := change(base)
		if changed = ok; !ok {
			return base, kvstore.Keep, nil
		}
		next.Function = f
		if err := next.check(s.now()); err != nil {
			return base, kvstore.Keep, fmt.Errorf("the new circuit of %s would not validate: %w", f, err)
		}
		return next, kvstore.Write, nil
	})
	if err != nil {
		return base, rev, false, fmt.Errorf("write the circuit of %s: %w", f, err)
	}
	if !changed {
		return base, rev, false, nil
	}
	return st, rev, true, nil
}

// Watch watches the circuits whose keys match pattern (">" for all, or
// "CONTEXT.>"), with their history so that kvwatch.Initial can read them
// completely.
func (s *Store) Watch(ctx context.Context, pattern string) (jetstream.KeyWatcher, error) {
	return s.store.KV().Watch(ctx, pattern, jetstream.IncludeHistory())
}

// Decode validates a circuit a watch (or a consumer of the bucket's
// stream) delivered, under key: DecodeState at the bucket's clock. It
// does not quarantine: the watchers log, the notifier quarantines the
// message.
func (s *Store) Decode(key string, value []byte) (State, error) {
	return DecodeState(key, value, s.now())
}

// KV returns the bucket, for kvwatch.
func (s *Store) KV() jetstream.KeyValue { return s.store.KV() }

// JetStream returns the JetStream the bucket is on.
func (s *Store) JetStream() jetstream.JetStream { return s.js }
