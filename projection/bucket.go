package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvstore"
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
		if n < 1 || n > 5 {
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
