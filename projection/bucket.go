package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultBucket is the name of the KV bucket that holds the views, keyed
// by processor and record (ViewKey).
const DefaultBucket = "amends_views"

// LegacyBucket is the views bucket of the versions before the views were
// keyed by processor (keyed by record id alone), and LegacyDurable its
// projector's durable consumer. Nothing reads them any more: the views
// are projected into DefaultBucket from the event store (amends serve
// --migrate-views does it ahead of an upgrade), and they can be deleted
// once no instance of an earlier version runs.
const (
	LegacyBucket  = "amends_compensation_views"
	LegacyDurable = "amends-projection"
)

// BucketOption configures OpenViews. An option that cannot be applied makes
// OpenViews return an error wrapping ErrInvalidOption.
type BucketOption func(*jetstream.KeyValueConfig) error

// WithBucket names the views bucket (default DefaultBucket).
func WithBucket(name string) BucketOption {
	return func(c *jetstream.KeyValueConfig) error {
		if name == "" {
			return fmt.Errorf("bucket name is empty: %w", ErrInvalidOption)
		}
		c.Bucket = name
		return nil
	}
}

// WithBucketReplicas sets the replica count of a new bucket: 1 (default) on
// a single server, 3 in a cluster.
func WithBucketReplicas(n int) BucketOption {
	return func(c *jetstream.KeyValueConfig) error {
		if !bounds.Within(n, 1, 5) {
			return fmt.Errorf("bucket replicas must be between 1 and 5, got %d: %w", n, ErrInvalidOption)
		}
		c.Replicas = n
		return nil
	}
}

// WithBucketStorage selects file (default) or memory storage for a new
// bucket. The views can always be rebuilt from the event store, so memory
// storage is safe, at the price of a full re-projection after a restart.
func WithBucketStorage(st jetstream.StorageType) BucketOption {
	return func(c *jetstream.KeyValueConfig) error {
		if st != jetstream.FileStorage && st != jetstream.MemoryStorage {
			return fmt.Errorf("bucket storage %d is neither file nor memory: %w", st, ErrInvalidOption)
		}
		c.Storage = st
		return nil
	}
}

// WithBucketCompression has a new bucket stored with JetStream's S2
// compression: the server compresses each block of the bucket's stream
// once it is full; readers see the same values. An existing bucket keeps
// its compression (it is not among the settings OpenViews checks).
func WithBucketCompression() BucketOption {
	return func(c *jetstream.KeyValueConfig) error {
		c.Compression = true
		return nil
	}
}

// viewsSpec is the views bucket of opts: its replicas, storage, history
// and TTL must match; its content is rebuilt from the event store, so a
// repair may create it again (and the projector then projects every
// record again).
func viewsSpecOf(opts ...BucketOption) (kvstore.Spec, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      DefaultBucket,
		Description: "amends: the current view of every ExecutionFailed record",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    1,
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return kvstore.Spec{}, err
		}
	}
	return kvstore.Spec{Config: cfg, MaxValue: viewsSpec.MaxValue, Disposable: true,
		Match: []kvstore.Setting{kvstore.SettingReplicas, kvstore.SettingStorage, kvstore.SettingHistory, kvstore.SettingTTL}}, nil
}

// Views is the views bucket: its KeyValue (embedded: a Views is a
// jetstream.KeyValue) and the JetStream handle with which it reads a
// record's view by id alone (Lookup), whatever the processor its key
// names (ViewKey). Safe for concurrent use.
type Views struct {
	jetstream.KeyValue
	js jetstream.JetStream
}

// NewViews returns the views bucket kv, read through js (kv may be a
// wrapper of the client's KeyValue; Lookup reads the bucket by its name
// through js). A nil js or kv is an error wrapping ErrInvalidOption.
func NewViews(js jetstream.JetStream, kv jetstream.KeyValue) (*Views, error) {
	if js == nil || kv == nil {
		return nil, fmt.Errorf("views: the JetStream handle and the bucket must not be nil: %w", ErrInvalidOption)
	}
	return &Views{KeyValue: kv, js: js}, nil
}

// Lookup returns the last change of record id's keys: its current view,
// or the deletion of the key it was last at (Operation tells), whatever
// its processor. The last message on the record's keys is its current
// view because a view that moves to another processor's key is deleted
// from its old key first. No change at all is an error matching
// jetstream.ErrKeyNotFound; an id that cannot be a record id, one
// matching ErrInvalidQuery, and nothing is sent. It reads from the
// stream leader. Safe for concurrent use.
func (v *Views) Lookup(ctx context.Context, id string) (jetstream.KeyValueEntry, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	e, err := kvwatch.Last(ctx, v.js, v.Bucket(), recordPattern(id))
	if err != nil {
		return nil, err
	}
	if _, got, err := ParseKey(e.Key()); err != nil || got != id {
		return nil, fmt.Errorf("the views bucket's key %s is no key of record %s: %w", kvstore.QuoteKey(e.Key()), kvstore.Quote(id), ErrCorruptView)
	}
	return e, nil
}

// OpenViews returns the KV bucket of the views, creating it if it does not
// exist. It keeps one value per key (history 1), keyed by processor and
// record (ViewKey). An existing bucket
// whose replicas, storage, history or TTL differ is an error wrapping
// ErrIncompatibleBucket that lists the differences and says how to repair
// them (RepairViews, amends serve --repair-buckets); OpenViews never
// changes an existing bucket. Safe to call from several instances at once.
func OpenViews(ctx context.Context, js jetstream.JetStream, opts ...BucketOption) (*Views, error) {
	spec, err := viewsSpecOf(opts...)
	if err != nil {
		return nil, err
	}
	b, err := kvstore.Open(ctx, js, spec)
	if errors.Is(err, kvstore.ErrMismatch) {
		return nil, fmt.Errorf("%w: %w", err, ErrIncompatibleBucket)
	}
	if err != nil {
		return nil, err
	}
	return NewViews(js, b.KV())
}

// RepairViews brings an existing views bucket to the settings of opts (see
// OpenViews): in place where JetStream allows it, else (another storage)
// by deleting it and creating it again, after which a running projector
// projects every record again. It creates a missing bucket. dryRun
// changes nothing. It returns what it did ("none", "created", "updated",
// "recreated") and the differences it found.
func RepairViews(ctx context.Context, js jetstream.JetStream, dryRun bool, opts ...BucketOption) (string, []string, error) {
	spec, err := viewsSpecOf(opts...)
	if err != nil {
		return "", nil, err
	}
	r, err := kvstore.Repair(ctx, js, spec, dryRun)
	return r.Action, r.Diffs, err
}

// RetireView deletes the view of record id if it is of the record's
// history up to stream sequence through, the history retention removed
// (scheduler's sweeper): the index drops the record when its watch sees
// the delete. A view of a later stream (the record failed again after
// its removal) is kept, and so is a view another writer changed
// meanwhile (the delete is a compare-and-set on the revision read), and
// one that does not decode is left to the index's repair. A missing view
// is not an error. It reports whether it deleted one.
// Errors: ErrInvalidQuery for an id that cannot be a record id, the
// bucket's. Safe for concurrent use.
func RetireView(ctx context.Context, views *Views, id string, through uint64) (bool, error) {
	e, err := views.Lookup(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the view of record %s: %w", id, err)
	}
	if e.Operation() != jetstream.KeyValuePut {
		return false, nil
	}
	v, err := readView(e.Value())
	if err != nil || v.Seq > through {
		// Of a later history, or one that does not decode: the index
		// quarantines that, and the reprojector deletes a view whose
		// record has no history.
		return false, nil
	}
	if err := views.Delete(ctx, e.Key(), jetstream.LastRevision(e.Revision())); err != nil {
		if kvstore.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("delete view %s: %w", e.Key(), err)
	}
	return true, nil
}
