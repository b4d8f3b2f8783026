package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// Lease bucket defaults.
const (
	DefaultLeaseBucket = "amends_scheduler_lease"
	DefaultLeaseTTL    = 30 * time.Second
)

// Leases is a KV bucket whose keys expire TTL after their last write: a
// lease held by renewing it, lost by not renewing it. The bucket keeps a
// marker when a key expires, so a waiting instance is told at once.
type Leases struct {
	leases *kvstore.Store[leaseValue]
	ttl    time.Duration
}

// LeasesOption configures OpenLeases. An option that cannot be applied
// makes OpenLeases return an error wrapping ErrInvalidOption.
type LeasesOption func(*jetstream.KeyValueConfig) error

// WithLeaseBucket names the bucket (default DefaultLeaseBucket).
func WithLeaseBucket(name string) LeasesOption {
	return func(c *jetstream.KeyValueConfig) error {
		if name == "" {
			return fmt.Errorf("lease bucket name is empty: %w", ErrInvalidOption)
		}
		c.Bucket = name
		return nil
	}
}

// WithLeaseTTL sets how long a lease lives after its last renewal (default
// DefaultLeaseTTL, at least 1s): the longest a dead holder blocks the
// others.
func WithLeaseTTL(d time.Duration) LeasesOption {
	return func(c *jetstream.KeyValueConfig) error {
		if d < time.Second {
			return fmt.Errorf("lease TTL must be at least 1s, got %s: %w", d, ErrInvalidOption)
		}
		c.TTL, c.LimitMarkerTTL = d, d
		return nil
	}
}

// WithLeaseReplicas sets the bucket's replica count (default 1; 3 in a
// cluster, so the lease survives the loss of a server).
func WithLeaseReplicas(n int) LeasesOption {
	return func(c *jetstream.KeyValueConfig) error {
		if !bounds.Within(n, 1, 5) {
			return fmt.Errorf("lease bucket replicas must be between 1 and 5, got %d: %w", n, ErrInvalidOption)
		}
		c.Replicas = n
		return nil
	}
}

// OpenLeases returns the lease bucket, creating it if it does not exist.
// An existing bucket with another TTL or replica count is an error
// wrapping ErrIncompatibleBucket: every instance must agree on the TTL.
func OpenLeases(ctx context.Context, js jetstream.JetStream, opts ...LeasesOption) (*Leases, error) {
	cfg, err := leaseConfig(opts)
	if err != nil {
		return nil, err
	}
	b, err := kvstore.Open(ctx, js, leaseSpec(cfg))
	if errors.Is(err, kvstore.ErrMismatch) {
		return nil, fmt.Errorf("lease bucket %s: every instance must agree on its TTL: %w: %w", cfg.Bucket, err, ErrIncompatibleBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", cfg.Bucket, err)
	}
	return &Leases{leases: kvstore.For(b, leaseCodec), ttl: cfg.TTL}, nil
}

// BindLeases binds the existing lease bucket as it is, with its own TTL,
// whatever settings it has: for a serve that found the bucket with other
// settings (ErrIncompatibleBucket) and goes on with the bucket's TTL
// rather than not scheduling at all. Every instance then shares the
// bucket's TTL. Errors are JetStream's.
func BindLeases(ctx context.Context, js jetstream.JetStream, bucket string) (*Leases, error) {
	if bucket == "" {
		bucket = DefaultLeaseBucket
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", bucket, err)
	}
	if st.TTL() < time.Second {
		return nil, fmt.Errorf("lease bucket %s has TTL %s; a lease needs one of at least 1s: %w", bucket, st.TTL(), ErrIncompatibleBucket)
	}
	return &Leases{leases: kvstore.For(kvstore.Bind(js, kv, kvstore.Spec{MaxValue: 4 << 10}), leaseCodec), ttl: st.TTL()}, nil
}

// RepairLeases brings the lease bucket of opts to its settings (see
// OpenLeases): in place where JetStream allows it, else by deleting and
// creating it again (a lease is transient: the holder acquires it again).
// dryRun changes nothing. It returns what it did and the differences.
func RepairLeases(ctx context.Context, js jetstream.JetStream, dryRun bool, opts ...LeasesOption) (string, []string, error) {
	cfg, err := leaseConfig(opts)
	if err != nil {
		return "", nil, err
	}
	r, err := kvstore.Repair(ctx, js, leaseSpec(cfg), dryRun)
	return r.Action, r.Diffs, err
}

// leaseConfig is the lease bucket's configuration: the defaults, then
// opts. Errors are the options'.
func leaseConfig(opts []LeasesOption) (jetstream.KeyValueConfig, error) {
	cfg := jetstream.KeyValueConfig{Bucket: DefaultLeaseBucket, Description: "amends: the scheduler's lease", History: 1,
		TTL: DefaultLeaseTTL, LimitMarkerTTL: DefaultLeaseTTL, Replicas: 1}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return jetstream.KeyValueConfig{}, err
		}
	}
	return cfg, nil
}

// leaseSpec is the lease bucket of cfg as the KV layer opens and repairs
// it: its TTL, marker TTL and replicas must match, and its content (a
// lease) may be lost.
func leaseSpec(cfg jetstream.KeyValueConfig) kvstore.Spec {
	return kvstore.Spec{Config: cfg, MaxValue: 4 << 10, Disposable: true,
		Match: []kvstore.Setting{kvstore.SettingTTL, kvstore.SettingMarkerTTL, kvstore.SettingReplicas}}
}

// TTL returns how long a lease lives after its last renewal.
func (l *Leases) TTL() time.Duration { return l.ttl }
