package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// ParkReleases keeps the progress of releases in a KV bucket. Safe for
// concurrent use.
type ParkReleases struct{ store *kvstore.Store[ParkRelease] }

// ParkReleasesOption configures OpenParkReleases.
type ParkReleasesOption func(*releasesOptions)

type releasesOptions struct{ quarantine *quarantine.Quarantine }

// WithParkReleasesQuarantine records the stored releases that do not validate
// (DecodeParkRelease) in q, the process's quarantine, so its counts include
// them (default: a quarantine on js).
func WithParkReleasesQuarantine(q *quarantine.Quarantine) ParkReleasesOption {
	return func(o *releasesOptions) { o.quarantine = q }
}

// OpenParkReleases returns the progress bucket (DefaultParkReleaseBucket if
// bucket is ""), creating it with replicas (1 if 0) if it does not exist.
func OpenParkReleases(ctx context.Context, js jetstream.JetStream, bucket string, replicas int, opts ...ParkReleasesOption) (*ParkReleases, error) {
	if bucket == "" {
		bucket = DefaultParkReleaseBucket
	}
	if replicas == 0 {
		replicas = 1
	}
	if !bounds.Within(replicas, 1, 5) {
		return nil, fmt.Errorf("release bucket replicas must be between 1 and 5, got %d: %w", replicas, ErrInvalidOption)
	}
	var o releasesOptions
	for _, opt := range opts {
		opt(&o)
	}
	var kopts []kvstore.Option
	if o.quarantine != nil {
		kopts = append(kopts, kvstore.WithRecorder(o.quarantine))
	}
	b, err := kvstore.Open(ctx, js, parkReleaseSpec(bucket, replicas), kopts...)
	if err != nil {
		return nil, fmt.Errorf("release bucket: %w", err)
	}
	return &ParkReleases{store: kvstore.For(b, parkReleaseCodec)}, nil
}

func parkReleaseKey(context, processor string) string { return kvstore.Segments(context, processor) }

// Get returns the release of processor (context, name); ok is false if
// none was ever recorded. A stored release that does not validate
// (DecodeParkRelease) is an error matching kvstore's ErrInvalid that names the
// field; it is quarantined.
func (r *ParkReleases) Get(ctx context.Context, context, processor string) (rel ParkRelease, ok bool, err error) {
	rel, _, err = r.store.Get(ctx, parkReleaseKey(context, processor))
	if errors.Is(err, kvstore.ErrNotFound) {
		return ParkRelease{}, false, nil
	}
	if err != nil {
		return ParkRelease{}, false, fmt.Errorf("release of %s/%s: %w", context, processor, err)
	}
	return rel, true, nil
}

func (r *ParkReleases) put(ctx context.Context, rel ParkRelease) error {
	_, err := r.store.Put(ctx, parkReleaseKey(rel.Context, rel.Processor), rel)
	return err
}

// Watch returns a watch of every release's progress (see
// jetstream.KeyValue.WatchAll); each value is a Release in JSON: read it
// with Decode.
func (r *ParkReleases) Watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	return r.store.KV().WatchAll(ctx)
}

// Decode validates a release a Watch delivered (DecodeParkRelease); one that
// does not validate is quarantined and an error matching kvstore's
// ErrInvalid.
func (r *ParkReleases) Decode(ctx context.Context, e jetstream.KeyValueEntry) (ParkRelease, error) {
	return r.store.DecodeEntry(ctx, e)
}
