package kvstoretest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/kvstore"
)

// Case is one store under the suite.
type Case[T any] struct {
	// Spec is the bucket as the store opens it. Each check runs in a
	// bucket of its own, named after Spec.Config.Bucket (or "conform").
	Spec kvstore.Spec
	// Codec is the store's codec.
	Codec kvstore.Codec[T]
	// Samples are valid values under valid keys, with distinct encodings:
	// two of them at least under one key (the compare-and-set check
	// writes one over the other).
	Samples []Sample[T]
	// Bad are stored values the codec must refuse: at least one. The
	// watch check writes a sample, a bad value and a deletion on three
	// keys when the samples and the bad values have them; on one key
	// otherwise, which needs a bucket that keeps three revisions a key.
	// The suite adds bytes that are no value at all and a cut sample.
	Bad []Bad
	// Now is the bucket's clock (kvstore.WithClock), for values that carry
	// times; nil is time.Now.
	Now func() time.Time
	// Equal compares a value read with the one written; nil is
	// assert.Equal.
	Equal func(t *testing.T, want, got T)
}

// Sample is a valid value and its key.
type Sample[T any] struct {
	Key   string
	Value T
}

// Bad is a stored value the codec must refuse.
type Bad struct {
	// Name says what is wrong, for the subtest.
	Name string
	// Key is where it is stored.
	Key string
	// Value is the bytes stored.
	Value []byte
	// Field is the field the refusal must name ("" for the value as a
	// whole, "key" for the key); "*" accepts any.
	Field string
}

// recorder is a quarantine that counts what it was told.
type recorder struct{ n atomic.Int64 }

func (r *recorder) RecordKV(context.Context, string, string, uint64, error) error {
	r.n.Add(1)
	return nil
}

func (r *recorder) reports() int { return int(r.n.Load()) }

// Run runs the suite for c on js, each check as a subtest in a bucket of
// its own (deleted at the end). It fails t at once when c is not a case
// the suite can run (too few samples, no bad value, a sample that does not
// encode).
func Run[T any](t *testing.T, js jetstream.JetStream, c Case[T]) {
	t.Helper()
	require.GreaterOrEqual(t, len(c.Samples), 2, "kvstoretest: a case needs two samples at least")
	require.NotEqual(t, -1, sameKey(c.Samples), "kvstoretest: a case needs two samples under one key")
	require.NotEmpty(t, c.Bad, "kvstoretest: a case needs a bad value at least")
	s0 := &suite[T]{c: c}
	a, _, _ := s0.pair()
	if _, _, ok := s0.apart(a.Key); !ok {
		require.GreaterOrEqual(t, c.Spec.Config.History, uint8(3),
			"kvstoretest: a case needs a bad value and a sample under keys other than %s and each other, or a bucket that keeps three revisions a key", a.Key)
	}
	if c.Equal == nil {
		c.Equal = func(t *testing.T, want, got T) { assert.Equal(t, want, got) }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	s := &suite[T]{c: c, js: js, enc: make([][]byte, len(c.Samples))}
	for i, smp := range c.Samples {
		b, err := s.encode(smp.Value)
		require.NoError(t, err, "kvstoretest: sample %d does not encode", i)
		s.enc[i] = b
	}
	t.Cleanup(func() {
		for _, b := range s.buckets {
			_ = js.DeleteKeyValue(context.Background(), b)
		}
	})
	t.Run("round trip", s.roundTrip)
	t.Run("refuses bad values on read", s.refusesBad)
	t.Run("decoder never panics", s.neverPanics)
	t.Run("reports each bad revision once", s.reportsOnce)
	t.Run("compare and set", s.compareAndSet)
	t.Run("size bound", s.sizeBound)
	t.Run("watch resumes after a revision", s.watchResumes)
}

type suite[T any] struct {
	c       Case[T]
	js      jetstream.JetStream
	enc     [][]byte // the samples' encodings
	mu      sync.Mutex
	buckets []string // the buckets opened, deleted when Run's test ends
}

// sameKey returns the index of the first sample whose key a later one
// shares, or -1.
func sameKey[T any](samples []Sample[T]) int {
	for i, a := range samples {
		for _, b := range samples[i+1:] {
			if a.Key == b.Key {
				return i
			}
		}
	}
	return -1
}

// pair returns two samples under one key.
func (s *suite[T]) pair() (a, b Sample[T], same []T) {
	i := sameKey(s.c.Samples)
	a = s.c.Samples[i]
	for j, smp := range s.c.Samples {
		if smp.Key != a.Key {
			continue
		}
		same = append(same, smp.Value)
		if j > i && len(same) == 2 {
			b = smp
		}
	}
	return a, b, same
}

func (s *suite[T]) encode(v T) ([]byte, error) {
	if s.c.Codec.Encode == nil {
		return json.Marshal(v)
	}
	return s.c.Codec.Encode(v)
}

// open creates a fresh bucket of the case's Spec (with spec's changes)
// and its store, reporting to rec.
func (s *suite[T]) open(t *testing.T, rec kvstore.Recorder, change func(*kvstore.Spec)) *kvstore.Store[T] {
	t.Helper()
	spec := s.c.Spec
	base := cmp.Or(spec.Config.Bucket, "conform")
	s.mu.Lock()
	spec.Config.Bucket = fmt.Sprintf("%s_c%d", base, len(s.buckets)+1)
	s.buckets = append(s.buckets, spec.Config.Bucket)
	s.mu.Unlock()
	if change != nil {
		change(&spec)
	}
	b, err := kvstore.Open(context.Background(), s.js, spec, kvstore.WithRecorder(rec), kvstore.WithClock(s.c.Now))
	require.NoError(t, err, "kvstoretest: open bucket %s", spec.Config.Bucket)
	return kvstore.For(b, s.c.Codec)
}
