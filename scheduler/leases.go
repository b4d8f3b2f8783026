package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	kv  jetstream.KeyValue
	ttl time.Duration
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
		if n < 1 || n > 5 {
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
	cfg := jetstream.KeyValueConfig{
		Bucket:         DefaultLeaseBucket,
		Description:    "amends: the scheduler's lease",
		History:        1,
		TTL:            DefaultLeaseTTL,
		LimitMarkerTTL: DefaultLeaseTTL,
		Replicas:       1,
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		if err == nil {
			err = compatible(ctx, kv, cfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", cfg.Bucket, err)
	}
	return &Leases{kv: kv, ttl: cfg.TTL}, nil
}

func compatible(ctx context.Context, kv jetstream.KeyValue, want jetstream.KeyValueConfig) error {
	st, err := kv.Status(ctx)
	if err != nil {
		return err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return nil
	}
	have := bs.Config()
	if have.TTL != want.TTL || have.Replicas != want.Replicas || have.LimitMarkerTTL == 0 {
		return fmt.Errorf("exists with TTL %s, replicas %d, marker TTL %s (wanted %s, %d, %s); amends never reconfigures it: match the options or delete the bucket: %w",
			have.TTL, have.Replicas, have.LimitMarkerTTL, want.TTL, want.Replicas, want.LimitMarkerTTL, ErrIncompatibleBucket)
	}
	return nil
}

// TTL returns how long a lease lives after its last renewal.
func (l *Leases) TTL() time.Duration { return l.ttl }
