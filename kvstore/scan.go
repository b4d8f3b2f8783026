package kvstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
)

// Keys returns the keys matching pattern (">" for all) that have a
// value, in no order, read completely (kvwatch.Keys).
func (b *Bucket) Keys(ctx context.Context, pattern string) ([]string, error) {
	keys, err := kvwatch.Keys(ctx, b.js, b.kv, pattern)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", b.Name(), err)
	}
	return keys, nil
}

// Scan calls fn with every value of the keys matching pattern (">" for
// all) as of a moment after the call, in no order: the value and revision,
// or an *InvalidError (reported) for a value that does not validate. It
// reads one watch of the bucket (kvwatch.Initial) and no key twice; its
// memory is what the matching values hold. Errors: the watch's, ctx's.
func (s *Store[T]) Scan(ctx context.Context, pattern string, fn func(key string, v T, rev uint64, err error)) error {
	w, err := s.kv.Watch(ctx, pattern, jetstream.IncludeHistory())
	if err != nil {
		return fmt.Errorf("bucket %s: watch %s: %w", s.Name(), pattern, err)
	}
	defer func() { _ = w.Stop() }()
	last := map[string]jetstream.KeyValueEntry{}
	err = kvwatch.Initial(ctx, s.js, s.kv, pattern, w, func(e jetstream.KeyValueEntry) {
		if e.Operation() == jetstream.KeyValuePut {
			last[e.Key()] = e
		} else {
			delete(last, e.Key())
		}
	})
	if err != nil {
		return fmt.Errorf("bucket %s: %w", s.Name(), err)
	}
	for k, e := range last {
		v, err := s.DecodeEntry(ctx, e)
		fn(k, v, e.Revision(), err)
	}
	return nil
}
