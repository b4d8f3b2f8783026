package kvstoretest

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/kvstore"
)

// roundTrip: every sample written reads back the same, by Get and Scan,
// and the value read encodes to bytes that decode to it again.
func (s *suite[T]) roundTrip(t *testing.T) {
	ctx := t.Context()
	st := s.open(t, &recorder{}, nil)
	revs := map[string]uint64{}
	for _, smp := range s.c.Samples {
		put, err := st.Put(ctx, smp.Key, smp.Value)
		require.NoError(t, err, "put %s", smp.Key)
		revs[smp.Key] = put
		got, rev, err := st.Get(ctx, smp.Key)
		require.NoError(t, err, "get %s", smp.Key)
		assert.Equal(t, put, rev, "the revision of %s", smp.Key)
		s.c.Equal(t, smp.Value, got)
		again, err := s.encode(got)
		require.NoError(t, err)
		got2, err := s.c.Codec.Decode(kvstore.Entry{Bucket: st.Name(), Key: smp.Key, Revision: rev, Value: again, Now: s.c.Now()})
		require.NoError(t, err, "the value read of %s encodes to one that decodes", smp.Key)
		s.c.Equal(t, smp.Value, got2)
	}
	seen := map[string]bool{}
	require.NoError(t, st.Scan(ctx, ">", func(key string, v T, rev uint64, err error) {
		assert.NoError(t, err, "scan %s", key)
		assert.Equal(t, revs[key], rev, "scan's revision of %s", key)
		seen[key] = true
	}))
	assert.Len(t, seen, len(revs), "scan sees every key once")
	assert.Zero(t, st.Invalid(), "nothing valid is reported")
}

// bads is the case's bad values and the suite's own: bytes that are no
// value, and the first sample cut in half.
func (s *suite[T]) bads() []Bad {
	key := s.c.Samples[0].Key
	return append(append([]Bad(nil), s.c.Bad...),
		Bad{Name: "not a value", Key: key, Value: []byte("\x00\xff{not a value"), Field: "*"},
		Bad{Name: "cut in half", Key: key, Value: s.enc[0][:len(s.enc[0])/2], Field: "*"})
}

// refusesBad: each bad value stored is an *InvalidError that names the
// bucket, key, revision and field, by Get, Scan and Change, and never a
// value.
func (s *suite[T]) refusesBad(t *testing.T) {
	for _, bad := range s.bads() {
		t.Run(bad.Name, func(t *testing.T) {
			ctx := t.Context()
			st := s.open(t, &recorder{}, nil)
			rev, err := st.KV().Put(ctx, bad.Key, bad.Value)
			require.NoError(t, err)
			v, _, err := st.Get(ctx, bad.Key)
			s.requireInvalid(t, err, st.Name(), bad, rev)
			var zero T
			s.c.Equal(t, zero, v)
			n := 0
			require.NoError(t, st.Scan(ctx, ">", func(key string, _ T, r uint64, err error) {
				n++
				s.requireInvalid(t, err, st.Name(), bad, r)
			}))
			assert.Equal(t, 1, n, "scan met the bad key")
			_, _, err = st.Change(ctx, bad.Key, func(cur kvstore.Current[T]) (T, kvstore.Action, error) {
				assert.NotNil(t, cur.Invalid, "change is told the value is invalid")
				assert.False(t, cur.Exists())
				s.c.Equal(t, zero, cur.Value)
				return cur.Value, kvstore.Keep, nil
			})
			require.NoError(t, err)
		})
	}
}

func (s *suite[T]) requireInvalid(t *testing.T, err error, bucket string, bad Bad, rev uint64) {
	t.Helper()
	require.ErrorIs(t, err, kvstore.ErrInvalid, "%s is refused", bad.Name)
	var ie *kvstore.InvalidError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, bucket, ie.Bucket)
	assert.Equal(t, bad.Key, ie.Key)
	assert.Equal(t, rev, ie.Revision)
	assert.NotEmpty(t, ie.Reason, "the refusal says why")
	if bad.Field != "*" {
		assert.Equal(t, bad.Field, ie.Field, "the refusal names the field: %v", ie)
	}
}

// neverPanics feeds the decoder every prefix of each sample's encoding,
// each with one byte changed at a spread of places, and the bad values;
// the decoder must answer, not panic.
func (s *suite[T]) neverPanics(t *testing.T) {
	var inputs [][]byte
	for _, enc := range s.enc {
		for n := range len(enc) {
			inputs = append(inputs, enc[:n])
		}
		step := max(len(enc)/64, 1)
		for i := 0; i < len(enc); i += step {
			for _, b := range []byte{'"', '0', '{', ']', 0xff} {
				c := append([]byte(nil), enc...)
				c[i] = b
				inputs = append(inputs, c)
			}
		}
	}
	for _, bad := range s.c.Bad {
		inputs = append(inputs, bad.Value)
	}
	key := s.c.Samples[0].Key
	for _, in := range inputs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("the decoder panicked on %q: %v", in, r)
				}
			}()
			_, _ = s.c.Codec.Decode(kvstore.Entry{Bucket: "conform", Key: key, Revision: 1, Value: in, Now: s.c.Now()})
		}()
	}
}

// reportsOnce: a bad revision read twice is reported once; a new bad
// revision of the key is reported again.
func (s *suite[T]) reportsOnce(t *testing.T) {
	ctx := t.Context()
	rec := &recorder{}
	st := s.open(t, rec, nil)
	bad := s.c.Bad[0]
	_, err := st.KV().Put(ctx, bad.Key, bad.Value)
	require.NoError(t, err)
	for range 2 {
		_, _, err := st.Get(ctx, bad.Key)
		require.ErrorIs(t, err, kvstore.ErrInvalid)
	}
	assert.Equal(t, 1, rec.reports(), "one report for one bad revision read twice")
	_, err = st.KV().Put(ctx, bad.Key, bad.Value)
	require.NoError(t, err)
	_, _, err = st.Get(ctx, bad.Key)
	require.ErrorIs(t, err, kvstore.ErrInvalid)
	assert.Equal(t, 2, rec.reports(), "a new bad revision is reported again")
	assert.Equal(t, uint64(2), st.Invalid())
}

// compareAndSet: writes against a moved key are ErrConflict; concurrent
// Changes of one key all land, one revision each.
func (s *suite[T]) compareAndSet(t *testing.T) {
	ctx := t.Context()
	st := s.open(t, &recorder{}, nil)
	a, b, same := s.pair()
	first, err := st.Create(ctx, a.Key, a.Value)
	require.NoError(t, err)
	_, err = st.Create(ctx, a.Key, a.Value)
	requireConflict(t, err, "create over a value")
	second, err := st.Update(ctx, a.Key, b.Value, first)
	require.NoError(t, err)
	_, err = st.Update(ctx, a.Key, a.Value, first)
	requireConflict(t, err, "update from a moved revision")
	requireConflict(t, st.Delete(ctx, a.Key, first), "delete from a moved revision")
	got, rev, err := st.Get(ctx, a.Key)
	require.NoError(t, err)
	assert.Equal(t, second, rev, "the refused writes left the key alone")
	s.c.Equal(t, b.Value, got)

	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				next := same[(w+i)%len(same)]
				_, _, err := st.Change(ctx, a.Key, func(kvstore.Current[T]) (T, kvstore.Action, error) { return next, kvstore.Write, nil })
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "change retries its conflicts")
	}
	_, rev, err = st.Get(ctx, a.Key)
	require.NoError(t, err)
	assert.Equal(t, second+writers*each, rev, "every change wrote once")
}

func requireConflict(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, kvstore.ErrConflict, what)
	assert.True(t, kvstore.IsConflict(err), what)
}

// sizeBound: with a bound below the largest sample's size, writing it is
// ErrTooLarge and reading it (written past the store) is invalid.
func (s *suite[T]) sizeBound(t *testing.T) {
	ctx := t.Context()
	longest := 0
	for i, enc := range s.enc {
		if len(enc) > len(s.enc[longest]) {
			longest = i
		}
	}
	smp, enc := s.c.Samples[longest], s.enc[longest]
	require.Greater(t, len(enc), 1, "kvstoretest: a sample must encode to two bytes at least")
	st := s.open(t, &recorder{}, func(spec *kvstore.Spec) {
		spec.MaxValue = len(enc) - 1
		spec.Config.MaxValueSize = 0
	})
	_, err := st.Put(ctx, smp.Key, smp.Value)
	require.ErrorIs(t, err, kvstore.ErrTooLarge)
	_, _, err = st.Get(ctx, smp.Key)
	require.ErrorIs(t, err, kvstore.ErrNotFound, "nothing was written")
	rev, err := st.KV().Put(ctx, smp.Key, enc)
	require.NoError(t, err)
	_, _, err = st.Get(ctx, smp.Key)
	s.requireInvalid(t, err, st.Name(), Bad{Name: "over the bound", Key: smp.Key, Field: ""}, rev)
}

// watchResumes: a watch resumed after a revision delivers exactly the
// later changes, which decode as Get's, a bad one refused and a deletion
// passed as one. The changes are on different keys, so that a bucket
// that keeps one revision per key keeps them all.
func (s *suite[T]) watchResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Deadline)
	defer cancel()
	st := s.open(t, &recorder{}, nil)
	a, b, _ := s.pair()
	bad, other, apart := s.apart(a.Key)
	if apart {
		_, err := st.Put(ctx, other.Key, other.Value)
		require.NoError(t, err)
	} else {
		bad, other = s.c.Bad[0], a // on a's key
	}
	before, err := st.Put(ctx, a.Key, a.Value)
	require.NoError(t, err)
	put, err := st.Put(ctx, b.Key, b.Value)
	require.NoError(t, err)
	badRev, err := st.KV().Put(ctx, bad.Key, bad.Value)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, other.Key, 0))
	w, err := st.KV().WatchAll(ctx, jetstream.ResumeFromRevision(before+1), jetstream.IncludeHistory())
	require.NoError(t, err)
	defer func() { _ = w.Stop() }()
	var got []string
	follow, stop := context.WithCancel(ctx)
	defer stop()
	require.NoError(t, kvwatch.Follow(follow, w, func(e jetstream.KeyValueEntry) {
		switch {
		case e.Operation() != jetstream.KeyValuePut:
			got = append(got, "delete "+e.Key())
		case e.Revision() == badRev:
			_, err := st.DecodeEntry(ctx, e)
			s.requireInvalid(t, err, st.Name(), bad, badRev)
			got = append(got, "bad "+e.Key())
		default:
			v, err := st.DecodeEntry(ctx, e)
			require.NoError(t, err)
			assert.Equal(t, put, e.Revision())
			s.c.Equal(t, b.Value, v)
			got = append(got, "put "+e.Key())
		}
		if len(got) == 3 {
			stop()
		}
	}))
	assert.Equal(t, []string{"put " + b.Key, "bad " + bad.Key, "delete " + other.Key}, got,
		"the watch delivered these by the deadline of %s", testwait.Deadline)
}

// apart returns a bad value and a sample whose keys differ from key and
// from each other.
func (s *suite[T]) apart(key string) (Bad, Sample[T], bool) {
	for _, bad := range s.c.Bad {
		for _, smp := range s.c.Samples {
			if bad.Key != key && smp.Key != key && bad.Key != smp.Key {
				return bad, smp, true
			}
		}
	}
	return Bad{}, Sample[T]{}, false
}
