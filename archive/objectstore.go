package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// ObjectStore is a Sink in a JetStream Object Store bucket.
type ObjectStore struct {
	bucket string
	obs    jetstream.ObjectStore
}

var _ Sink = (*ObjectStore)(nil)

// OpenObjectStore binds bucket on js, creating it (file storage, replicas,
// 1 if 0) if it does not exist.
func OpenObjectStore(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*ObjectStore, error) {
	if !bucketRE.MatchString(bucket) {
		return nil, fmt.Errorf("archive bucket %q must be 1 to 64 of A-Z a-z 0-9 _ -: %w", clip(bucket), ErrInvalid)
	}
	if replicas == 0 {
		replicas = 1
	}
	obs, err := js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket, Description: "amends: archived histories of records removed by retention",
			Storage: jetstream.FileStorage, Replicas: replicas})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("archive bucket %s: %w", bucket, err)
	}
	return &ObjectStore{bucket: bucket, obs: obs}, nil
}

// String returns "objectstore:<bucket>".
func (o *ObjectStore) String() string { return "objectstore:" + o.bucket }

// Put stores data as object name; JetStream has it once Put returns.
func (o *ObjectStore) Put(ctx context.Context, name string, data []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if _, err := o.obs.PutBytes(ctx, name, data); err != nil {
		return fmt.Errorf("archive %s in bucket %s: %w", name, o.bucket, err)
	}
	return nil
}

// Get reads object name, at most MaxObjectBytes; the Object Store checks
// its digest.
func (o *ObjectStore) Get(ctx context.Context, name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	info, err := o.obs.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("archive %s has no %s: %w", o, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", name, err)
	}
	if info.Size > MaxObjectBytes {
		return nil, fmt.Errorf("archive %s is %d bytes, over %d: %w", name, info.Size, MaxObjectBytes, ErrTooLarge)
	}
	r, err := o.obs.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", name, err)
	}
	defer r.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(r, MaxObjectBytes+1)); err != nil {
		return nil, fmt.Errorf("archive %s: %w", name, err)
	}
	if buf.Len() > MaxObjectBytes {
		return nil, fmt.Errorf("archive %s is over %d bytes: %w", name, MaxObjectBytes, ErrTooLarge)
	}
	return buf.Bytes(), nil
}

// List returns the names of the bucket's objects this package writes.
func (o *ObjectStore) List(ctx context.Context) ([]string, error) {
	infos, err := o.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list archive bucket %s: %w", o.bucket, err)
	}
	var out []string
	for _, i := range infos {
		if ValidName(i.Name) == nil {
			out = append(out, i.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}
