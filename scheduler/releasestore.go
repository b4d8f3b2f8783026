package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// Releases keeps the progress of releases in a KV bucket. Safe for
// concurrent use.
type Releases struct{ store *kvstore.Store[Release] }

// ReleasesOption configures OpenReleases.
type ReleasesOption func(*releasesOptions)

type releasesOptions struct{ quarantine *quarantine.Quarantine }

// WithReleasesQuarantine records the stored releases that do not validate
// (DecodeRelease) in q, the process's quarantine, so its counts include
// them (default: a quarantine on js).
func WithReleasesQuarantine(q *quarantine.Quarantine) ReleasesOption {
	return func(o *releasesOptions) { o.quarantine = q }
}

// OpenReleases returns the progress bucket (DefaultReleaseBucket if
// bucket is ""), creating it with replicas (1 if 0) if it does not exist.
func OpenReleases(ctx context.Context, js jetstream.JetStream, bucket string, replicas int, opts ...ReleasesOption) (*Releases, error) {
	if bucket == "" {
		bucket = DefaultReleaseBucket
	}
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > 5 {
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
	b, err := kvstore.Open(ctx, js, releaseSpec(bucket, replicas), kopts...)
	if err != nil {
		return nil, fmt.Errorf("release bucket: %w", err)
	}
	return &Releases{store: kvstore.For(b, releaseCodec)}, nil
}

func releaseKey(context, processor string) string { return kvstore.Segments(context, processor) }

// Get returns the release of processor (context, name); ok is false if
// none was ever recorded. A stored release that does not validate
// (DecodeRelease) is an error matching kvstore's ErrInvalid that names the
// field; it is quarantined.
func (r *Releases) Get(ctx context.Context, context, processor string) (rel Release, ok bool, err error) {
	rel, _, err = r.store.Get(ctx, releaseKey(context, processor))
	if errors.Is(err, kvstore.ErrNotFound) {
		return Release{}, false, nil
	}
	if err != nil {
		return Release{}, false, fmt.Errorf("release of %s/%s: %w", context, processor, err)
	}
	return rel, true, nil
}

func (r *Releases) put(ctx context.Context, rel Release) error {
	_, err := r.store.Put(ctx, releaseKey(rel.Context, rel.Processor), rel)
	return err
}

// Watch returns a watch of every release's progress (see
// jetstream.KeyValue.WatchAll); each value is a Release in JSON: read it
// with Decode.
func (r *Releases) Watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	return r.store.KV().WatchAll(ctx)
}

// Decode validates a release a Watch delivered (DecodeRelease); one that
// does not validate is quarantined and an error matching kvstore's
// ErrInvalid.
func (r *Releases) Decode(ctx context.Context, e jetstream.KeyValueEntry) (Release, error) {
	return r.store.DecodeEntry(ctx, e)
}
