package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
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

// OpenViews returns the KV bucket of the views, creating it if it does not
// exist. It keeps one value per record (history 1). An existing bucket
// whose replicas, storage or history differ is an error wrapping
// ErrIncompatibleBucket that lists the differences; OpenViews never changes
// an existing bucket. Safe to call from several instances at once.
func OpenViews(ctx context.Context, js jetstream.JetStream, opts ...BucketOption) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      DefaultBucket,
		Description: "amends: the current view of every ExecutionFailed record",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    1,
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	return openBucket(ctx, js, cfg)
}

// openBucket creates cfg's bucket or binds to an existing one that matches.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, cfg)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketExists) {
		return nil, fmt.Errorf("create KV bucket %s: %w", cfg.Bucket, err)
	}
	kv, err = js.KeyValue(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("open KV bucket %s: %w", cfg.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("KV bucket %s status: %w", cfg.Bucket, err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return kv, nil
	}
	have := bs.Config()
	var diffs []string
	diff := func(field string, h, w any) {
		if h != w {
			diffs = append(diffs, fmt.Sprintf("%s %v (wanted %v)", field, h, w))
		}
	}
	diff("replicas", have.Replicas, cfg.Replicas)
	diff("storage", have.Storage, cfg.Storage)
	diff("history", have.History, cfg.History)
	diff("ttl", have.TTL, cfg.TTL)
	if len(diffs) > 0 {
		return nil, fmt.Errorf("KV bucket %s exists with %v; amends never reconfigures a bucket: match the options or delete the bucket: %w",
			cfg.Bucket, diffs, ErrIncompatibleBucket)
	}
	return kv, nil
}
