package projection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSnapshotBucket is the JetStream Object Store bucket the indexes
// keep their snapshots in, one object per views bucket (named after it).
const DefaultSnapshotBucket = "amends_index_snapshots"

// DefaultSnapshotEvery is how often an index saves a snapshot by default
// (WithSnapshots). A start-up replays the changes since the last one; at
// 5 minutes that is at most a few minutes of the projector's writes,
// while a save costs about a second of one core and the snapshot's bytes
// of upload per million records (docs/scaling.md), so under 1% of a core
// at a million records.
const DefaultSnapshotEvery = 5 * time.Minute

// The bounds of WithSnapshots' period.
const (
	MinSnapshotEvery = time.Second
	MaxSnapshotEvery = 24 * time.Hour
)

// DefaultMaxSnapshotBytes bounds the snapshot an index reads (about 80
// bytes a record: room for some 50 million records); a larger object is
// not read and counts as corrupt.
const DefaultMaxSnapshotBytes = 4 << 30

// Snapshots is the Object Store bucket of the index snapshots. Safe for
// concurrent use.
type Snapshots struct {
	store    jetstream.ObjectStore
	bucket   string
	maxBytes uint64
}

// SnapshotsOption configures OpenSnapshots. An option that cannot be
// applied makes OpenSnapshots return an error wrapping ErrInvalidOption.
type SnapshotsOption func(*snapshotsConfig) error

type snapshotsConfig struct {
	os       jetstream.ObjectStoreConfig
	maxBytes uint64
}

// WithSnapshotBucket names the bucket (default DefaultSnapshotBucket).
func WithSnapshotBucket(name string) SnapshotsOption {
	return func(c *snapshotsConfig) error {
		if name == "" {
			return fmt.Errorf("snapshot bucket name is empty: %w", ErrInvalidOption)
		}
		c.os.Bucket = name
		return nil
	}
}

// WithSnapshotStorage sets the storage and replicas of a new bucket
// (default file, 1). A snapshot is only a shortcut (the index can always
// load the views bucket in full), so memory storage is safe.
func WithSnapshotStorage(st jetstream.StorageType, replicas int) SnapshotsOption {
	return func(c *snapshotsConfig) error {
		if st != jetstream.FileStorage && st != jetstream.MemoryStorage {
			return fmt.Errorf("snapshot storage %d is neither file nor memory: %w", st, ErrInvalidOption)
		}
		if !bounds.Within(replicas, 1, 5) {
			return fmt.Errorf("snapshot bucket replicas must be between 1 and 5, got %d: %w", replicas, ErrInvalidOption)
		}
		c.os.Storage, c.os.Replicas = st, replicas
		return nil
	}
}

// WithMaxSnapshotBytes bounds the snapshot read (default
// DefaultMaxSnapshotBytes); n must be positive.
func WithMaxSnapshotBytes(n uint64) SnapshotsOption {
	return func(c *snapshotsConfig) error {
		if n == 0 {
			return fmt.Errorf("max snapshot bytes must be positive: %w", ErrInvalidOption)
		}
		c.maxBytes = n
		return nil
	}
}

// OpenSnapshots returns the snapshot bucket, creating it if it does not
// exist; it never changes an existing one. Safe to call from several
// instances at once.
func OpenSnapshots(ctx context.Context, js jetstream.JetStream, opts ...SnapshotsOption) (*Snapshots, error) {
	c := snapshotsConfig{
		os: jetstream.ObjectStoreConfig{Bucket: DefaultSnapshotBucket, Storage: jetstream.FileStorage, Replicas: 1,
			Description: "amends: snapshots of the record index, to start without reading every view"},
		maxBytes: DefaultMaxSnapshotBytes,
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	store, err := js.CreateObjectStore(ctx, c.os)
	if errors.Is(err, jetstream.ErrBucketExists) {
		store, err = js.ObjectStore(ctx, c.os.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("open the snapshot bucket %s: %w", c.os.Bucket, err)
	}
	return &Snapshots{store: store, bucket: c.os.Bucket, maxBytes: c.maxBytes}, nil
}

// Bucket returns the bucket's name.
func (s *Snapshots) Bucket() string { return s.bucket }

// Load returns the bytes of snapshot name. It returns an error wrapping
// ErrNoSnapshot if there is none, one wrapping ErrSnapshotTooLarge for an
// object past the bound (WithMaxSnapshotBytes), without reading it, and
// JetStream's error (the object store checks the object's digest) else.
func (s *Snapshots) Load(ctx context.Context, name string) ([]byte, error) {
	info, err := s.store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("snapshot %s in %s: %w", name, s.bucket, ErrNoSnapshot)
	}
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s in %s: %w", name, s.bucket, err)
	}
	if info.Size > s.maxBytes {
		return nil, fmt.Errorf("snapshot %s in %s has %d bytes, more than the %d allowed: %w", name, s.bucket, info.Size, s.maxBytes, ErrSnapshotTooLarge)
	}
	data, err := s.store.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s in %s: %w", name, s.bucket, err)
	}
	return data, nil
}

// Sizes returns the bytes of every snapshot whose name begins with
// prefix, by name, as the bucket's list says (one read of the bucket's
// object infos): an empty map if there is none. Safe for concurrent use.
func (s *Snapshots) Sizes(ctx context.Context, prefix string) (map[string]uint64, error) {
	infos, err := s.store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return map[string]uint64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the snapshots in %s: %w", s.bucket, err)
	}
	out := make(map[string]uint64)
	for _, info := range infos {
		if strings.HasPrefix(info.Name, prefix) {
			out[info.Name] = info.Size
		}
	}
	return out, nil
}

// Save stores data as snapshot name, replacing the one held.
func (s *Snapshots) Save(ctx context.Context, name string, data []byte) error {
	if _, err := s.store.PutBytes(ctx, name, data); err != nil {
		return fmt.Errorf("save snapshot %s in %s: %w", name, s.bucket, err)
	}
	return nil
}

// Delete removes snapshot name; a missing one is no error.
func (s *Snapshots) Delete(ctx context.Context, name string) error {
	if err := s.store.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete snapshot %s in %s: %w", name, s.bucket, err)
	}
	return nil
}
