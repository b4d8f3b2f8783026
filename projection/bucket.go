package projection

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/token"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultBucket is the name of the KV bucket that holds the views.
const DefaultBucket = "amends_compensation_views"

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

// OpenViews returns the KV bucket of the views, creating it if it does not
// exist. It keeps one value per record (history 1). An existing bucket
// whose replicas, storage, history or TTL differ is an error wrapping
// ErrIncompatibleBucket that lists the differences and says how to repair
// them (RepairViews, amends serve --repair-buckets); OpenViews never
// changes an existing bucket. Safe to call from several instances at once.
func OpenViews(ctx context.Context, js jetstream.JetStream, opts ...BucketOption) (jetstream.KeyValue, error) {
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
	return b.KV(), nil
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
func RetireView(ctx context.Context, views jetstream.KeyValue, id string, through uint64) (bool, error) {
	key, err := EncodeKey(id)
	if err != nil {
		return false, err
	}
	e, err := views.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read view %s: %w", key, err)
	}
	v, err := readView(e.Value())
	if err != nil || v.Seq > through {
		// Of a later history, or one that does not decode: the index
		// quarantines that, and the reprojector deletes a view whose
		// record has no history.
		return false, nil
	}
	if err := views.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		if kvstore.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("delete view %s: %w", key, err)
	}
	return true, nil
}

// viewKeys encodes record ids as KV keys: '=' starts an encoded one ('~'
// is not allowed in keys).
var viewKeys = token.Codec{Mark: '='}

// EncodeKey returns the KV key of record id. Ids made only of
// [A-Za-z0-9_-] (record ids are UUIDs) are used as they are; any other id
// becomes '=' followed by its unpadded base64url encoding, which only uses
// characters KV keys allow. The mapping is reversible and injective. An
// id that is not a record id (see CheckID) is an error matching
// ErrInvalidQuery.
func EncodeKey(id string) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	key, err := viewKeys.Encode(id)
	if err != nil {
		return "", fmt.Errorf("record id is empty: %w", ErrInvalidQuery)
	}
	return key, nil
}

// CheckID reports whether id can be a record id: 1 to
// eventstore.MaxIDLength bytes of UTF-8 text without control characters,
// the rule every aggregate id of the event store follows. The error
// matches ErrInvalidQuery and says which rule id breaks. Get, GetView and
// History check it before they send anything to NATS.
func CheckID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("record id is empty; it must be 1 to %d bytes of UTF-8 text: %w", eventstore.MaxIDLength, ErrInvalidQuery)
	case len(id) > eventstore.MaxIDLength:
		return fmt.Errorf("record id is %d bytes, over the limit of %d: %w", len(id), eventstore.MaxIDLength, ErrInvalidQuery)
	case !utf8.ValidString(id):
		return fmt.Errorf("record id %q is not valid UTF-8: %w", id, ErrInvalidQuery)
	}
	for i, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("record id %q has the control character %U at byte %d: %w", id, r, i, ErrInvalidQuery)
		}
	}
	return nil
}

// DecodeKey reverses EncodeKey. A key EncodeKey cannot produce is an error
// matching ErrCorruptView.
func DecodeKey(key string) (string, error) {
	id, err := viewKeys.Decode(key)
	if err != nil {
		return "", fmt.Errorf("view key: %v: %w", err, ErrCorruptView)
	}
	if CheckID(id) != nil {
		return "", fmt.Errorf("view key %.40q... holds an id that cannot be a record id: %w", key, ErrCorruptView)
	}
	return id, nil
}
