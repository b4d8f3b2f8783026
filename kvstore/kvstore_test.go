package kvstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore"
)

// counter is the value of the test bucket: a count, validated to be
// from 0 to 1000.
type counter struct {
	N int `json:"n"`
}

var counterCodec = kvstore.Codec[counter]{
	Decode: func(e kvstore.Entry) (counter, error) {
		var c counter
		if err := json.Unmarshal(e.Value, &c); err != nil {
			return c, kvstore.Invalid("", "not JSON")
		}
		return c, kvstore.Range("n", c.N, 0, 1000)
	},
}

type recorded struct {
	bucket, key string
	rev         uint64
	cause       string
}

type fakeRecorder struct {
	mu   sync.Mutex
	got  []recorded
	fail bool
}

func (r *fakeRecorder) RecordKV(_ context.Context, bucket, key string, rev uint64, cause error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("quarantine down")
	}
	r.got = append(r.got, recorded{bucket, key, rev, cause.Error()})
	return nil
}

func (r *fakeRecorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.got...)
}

func spec(name string) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: name, History: 1}, MaxValue: 256}
}

func open(t *testing.T, js jetstream.JetStream, rec kvstore.Recorder) *kvstore.Store[counter] {
	t.Helper()
	b, err := kvstore.Open(t.Context(), js, spec("counters"), kvstore.WithRecorder(rec))
	require.NoError(t, err)
	return kvstore.For(b, counterCodec)
}

func TestGetValidatesAndReportsOncePerRevision(t *testing.T) {
	js := natstest.New(t).JetStream()
	rec := &fakeRecorder{}
	s := open(t, js, rec)
	ctx := t.Context()

	rev, err := s.Create(ctx, "a", counter{N: 3})
	require.NoError(t, err)
	v, got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, counter{N: 3}, v)
	assert.Equal(t, rev, got)

	bad, err := s.KV().Put(ctx, "a", []byte(`{"n":-5}`))
	require.NoError(t, err)
	for range 3 {
		_, r, err := s.Get(ctx, "a")
		var ie *kvstore.InvalidError
		require.ErrorAs(t, err, &ie)
		assert.ErrorIs(t, err, kvstore.ErrInvalid)
		assert.Equal(t, kvstore.InvalidError{Bucket: "counters", Key: "a", Revision: bad, Field: "n", Reason: "must be from 0 to 1000, got -5"}, *ie)
		assert.Equal(t, bad, r)
		assert.Equal(t, "bucket counters key a revision "+strconv.FormatUint(bad, 10)+": n: must be from 0 to 1000, got -5", err.Error())
	}
	require.Len(t, rec.all(), 1, "one report per revision however often it is read")
	assert.Equal(t, recorded{"counters", "a", bad, "bucket counters key a revision " + strconv.FormatUint(bad, 10) + ": n: must be from 0 to 1000, got -5"}, rec.all()[0])

	again, err := s.KV().Put(ctx, "a", []byte(`garbage`))
	require.NoError(t, err)
	_, _, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, kvstore.ErrInvalid)
	require.Len(t, rec.all(), 2, "a new revision is a new report")
	assert.Equal(t, again, rec.all()[1].rev)
	assert.Equal(t, uint64(2), s.Invalid())

	_, _, err = s.Get(ctx, "missing")
	assert.ErrorIs(t, err, kvstore.ErrNotFound)
}

func TestAReportThatFailsIsTriedAgain(t *testing.T) {
	js := natstest.New(t).JetStream()
	rec := &fakeRecorder{fail: true}
	s := open(t, js, rec)
	_, err := s.KV().Put(t.Context(), "a", []byte(`{"n":5000}`))
	require.NoError(t, err)
	_, _, err = s.Get(t.Context(), "a")
	require.ErrorIs(t, err, kvstore.ErrInvalid)
	rec.mu.Lock()
	rec.fail = false
	rec.mu.Unlock()
	_, _, err = s.Get(t.Context(), "a")
	require.ErrorIs(t, err, kvstore.ErrInvalid)
	assert.Len(t, rec.all(), 1)
}

func TestValuesAreBounded(t *testing.T) {
	js := natstest.New(t).JetStream()
	s := open(t, js, &fakeRecorder{})
	big := make([]byte, 300)
	for i := range big {
		big[i] = ' '
	}
	copy(big, `{"n":1}`)
	_, err := s.KV().Put(t.Context(), "a", big)
	require.NoError(t, err)
	_, _, err = s.Get(t.Context(), "a")
	require.ErrorIs(t, err, kvstore.ErrInvalid)
	assert.Contains(t, err.Error(), "the value is 300 bytes, over the limit of 256")

	tooLarge := kvstore.For(s.Bucket, kvstore.Codec[string]{Decode: func(e kvstore.Entry) (string, error) { return string(e.Value), nil }})
	_, err = tooLarge.Put(t.Context(), "b", string(big))
	assert.ErrorIs(t, err, kvstore.ErrTooLarge)
}

func TestADecoderThatPanicsIsAnInvalidEntry(t *testing.T) {
	js := natstest.New(t).JetStream()
	b, err := kvstore.Open(t.Context(), js, spec("p"))
	require.NoError(t, err)
	s := kvstore.For(b, kvstore.Codec[int]{Decode: func(e kvstore.Entry) (int, error) {
		var a []int
		return a[len(e.Value)], nil // out of range
	}})
	_, err = s.KV().Put(t.Context(), "a", []byte("x"))
	require.NoError(t, err)
	_, _, err = s.Get(t.Context(), "a")
	require.ErrorIs(t, err, kvstore.ErrInvalid)
	assert.Contains(t, err.Error(), "the decoder failed on it")
}

func TestWritesReportConflicts(t *testing.T) {
	js := natstest.New(t).JetStream()
	s := open(t, js, nil)
	ctx := t.Context()
	rev, err := s.Create(ctx, "a", counter{N: 1})
	require.NoError(t, err)
	_, err = s.Create(ctx, "a", counter{N: 2})
	assert.ErrorIs(t, err, kvstore.ErrConflict, "create of an existing key")
	_, err = s.Update(ctx, "a", counter{N: 2}, rev+10)
	assert.ErrorIs(t, err, kvstore.ErrConflict, "update at another revision")
	assert.ErrorIs(t, s.Delete(ctx, "a", rev+10), kvstore.ErrConflict, "delete at another revision")
	next, err := s.Update(ctx, "a", counter{N: 2}, rev)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "a", next))
	_, err = s.Create(ctx, "a", counter{N: 3})
	assert.NoError(t, err, "a deleted key can be created again")
	_, err = s.Put(ctx, "bad key", counter{})
	assert.ErrorIs(t, err, kvstore.ErrInvalidKey)
}

// changeConcurrently increments one counter from several goroutines with
// Change and checks that no increment is lost.
func changeConcurrently(t *testing.T, s *kvstore.Store[counter], workers, each int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				_, _, err := s.Change(t.Context(), "c", func(cur kvstore.Current[counter]) (counter, kvstore.Action, error) {
					c := cur.Value
					c.N++
					return c, kvstore.Write, nil
				})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	v, _, err := s.Get(t.Context(), "c")
	require.NoError(t, err)
	assert.Equal(t, workers*each, v.N, "no increment lost")
}

// Both codes of a revision conflict are conflicts, and only they: the
// replicated one (10164, which nats-server 2.12 and later send for R>1
// streams) is the one notify/digest.go and processor/snapshot.go missed.
func TestIsConflictKnowsBothCodesAndNothingElse(t *testing.T) {
	for _, code := range []jetstream.ErrorCode{jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant} {
		err := fmt.Errorf("publish: %w", &jetstream.APIError{Code: 400, ErrorCode: code, Description: "wrong last sequence"})
		assert.True(t, kvstore.IsConflict(err), "code %d", code)
	}
	assert.True(t, kvstore.IsConflict(jetstream.ErrKeyRevisionMismatch))
	assert.True(t, kvstore.IsConflict(jetstream.ErrKeyExists))
	assert.False(t, kvstore.IsConflict(&jetstream.APIError{Code: 503, ErrorCode: 10163, Description: "wrong last sequence, try again"}))
	assert.False(t, kvstore.IsConflict(errors.New("wrong last sequence")), "no matching of messages")
	assert.False(t, kvstore.IsConflict(nil))
}

func TestChangeRetriesConflicts(t *testing.T) {
	js := natstest.New(t).JetStream()
	changeConcurrently(t, open(t, js, nil), 4, 25)
}

// A replicated bucket reports a conflict with code 10164, not 10071: the
// loops that only knew 10071 gave up at the first race.
func TestChangeRetriesConflictsOfAReplicatedBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := natstest.NewCluster(t, 3)
	_, js := c.Connect()
	sp := spec("replicated")
	sp.Config.Replicas = 3
	b, err := kvstore.Open(t.Context(), js, sp)
	require.NoError(t, err)
	s := kvstore.For(b, counterCodec)
	rev, err := s.Create(t.Context(), "x", counter{N: 1})
	require.NoError(t, err)
	_, err = s.Update(t.Context(), "x", counter{N: 2}, rev+5)
	require.ErrorIs(t, err, kvstore.ErrConflict)
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Contains(t, []jetstream.ErrorCode{jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant}, apiErr.ErrorCode)
	_, err = s.Create(t.Context(), "x", counter{N: 3})
	require.ErrorIs(t, err, kvstore.ErrConflict, "a create's conflict on a replicated bucket")
	changeConcurrently(t, s, 4, 10)
}

func TestChangeSeesInvalidValuesWithoutActingOnThem(t *testing.T) {
	js := natstest.New(t).JetStream()
	rec := &fakeRecorder{}
	s := open(t, js, rec)
	ctx := t.Context()
	bad, err := s.KV().Put(ctx, "c", []byte(`{"n":"many"}`))
	require.NoError(t, err)
	var seen kvstore.Current[counter]
	v, rev, err := s.Change(ctx, "c", func(cur kvstore.Current[counter]) (counter, kvstore.Action, error) {
		seen = cur
		return counter{N: 7}, kvstore.Write, nil
	})
	require.NoError(t, err)
	require.NotNil(t, seen.Invalid, "the function is told the value is invalid")
	assert.Equal(t, bad, seen.Revision)
	assert.False(t, seen.Exists())
	assert.Equal(t, counter{}, seen.Value, "no value of an invalid entry is passed on")
	assert.Equal(t, counter{N: 7}, v)
	assert.Greater(t, rev, bad)
	assert.Len(t, rec.all(), 1)

	_, rev, err = s.Change(ctx, "c", func(kvstore.Current[counter]) (counter, kvstore.Action, error) {
		return counter{}, kvstore.Remove, nil
	})
	require.NoError(t, err)
	assert.Zero(t, rev)
	_, _, err = s.Get(ctx, "c")
	assert.ErrorIs(t, err, kvstore.ErrNotFound)

	stop := errors.New("no")
	_, _, err = s.Change(ctx, "c", func(kvstore.Current[counter]) (counter, kvstore.Action, error) { return counter{}, kvstore.Write, stop })
	assert.ErrorIs(t, err, stop)
}

func TestScanReadsEveryValueOnce(t *testing.T) {
	js := natstest.New(t).JetStream()
	s := open(t, js, &fakeRecorder{})
	ctx := t.Context()
	for i := range 20 {
		_, err := s.Put(ctx, fmt.Sprintf("k%d", i), counter{N: i})
		require.NoError(t, err)
	}
	_, err := s.Put(ctx, "k3", counter{N: 33})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "k4", 0))
	_, err = s.KV().Put(ctx, "k5", []byte("no"))
	require.NoError(t, err)
	got := map[string]int{}
	invalid := 0
	require.NoError(t, s.Scan(ctx, ">", func(key string, v counter, _ uint64, err error) {
		if err != nil {
			require.ErrorIs(t, err, kvstore.ErrInvalid)
			invalid++
			return
		}
		_, dup := got[key]
		require.False(t, dup, "key %s twice", key)
		got[key] = v.N
	}))
	assert.Len(t, got, 18)
	assert.Equal(t, 33, got["k3"])
	assert.Equal(t, 1, invalid)
}

func TestOpenChecksTheSettingsItMatchesAndRepairFixesThem(t *testing.T) {
	js := natstest.New(t).JetStream()
	ctx := t.Context()
	sp := kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: "lease", History: 1, TTL: 30 * time.Second, LimitMarkerTTL: 30 * time.Second},
		Match: []kvstore.Setting{kvstore.SettingTTL, kvstore.SettingMarkerTTL}, Disposable: true}
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "lease", History: 1, TTL: time.Minute, LimitMarkerTTL: time.Minute})
	require.NoError(t, err)
	_, err = kvstore.Open(ctx, js, sp)
	var me *kvstore.MismatchError
	require.ErrorAs(t, err, &me)
	assert.ErrorIs(t, err, kvstore.ErrMismatch)
	assert.Equal(t, []string{"ttl 1m0s (wanted 30s)", "limit marker ttl 1m0s (wanted 30s)"}, me.Diffs)
	assert.Contains(t, err.Error(), "amends serve --repair-buckets", "the advice works with the embedded server")

	dry, err := kvstore.Repair(ctx, js, sp, true)
	require.NoError(t, err)
	assert.Equal(t, "updated", dry.Action)
	_, err = kvstore.Open(ctx, js, sp)
	require.ErrorIs(t, err, kvstore.ErrMismatch, "a dry run changes nothing")

	done, err := kvstore.Repair(ctx, js, sp, false)
	require.NoError(t, err)
	assert.Equal(t, "updated", done.Action)
	_, err = kvstore.Open(ctx, js, sp)
	require.NoError(t, err)
	again, err := kvstore.Repair(ctx, js, sp, false)
	require.NoError(t, err)
	assert.Equal(t, "none", again.Action)
}

func TestRepairRecreatesOnlyADisposableBucket(t *testing.T) {
	js := natstest.New(t).JetStream()
	ctx := t.Context()
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "views", Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	sp := kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: "views", Storage: jetstream.FileStorage}, Match: []kvstore.Setting{kvstore.SettingStorage}}
	_, err = kvstore.Repair(ctx, js, sp, false)
	require.ErrorIs(t, err, kvstore.ErrMismatch, "storage cannot change in place, and the content would be lost")
	sp.Disposable = true
	r, err := kvstore.Repair(ctx, js, sp, false)
	require.NoError(t, err)
	assert.Equal(t, "recreated", r.Action)
	_, err = kvstore.Open(ctx, js, sp)
	require.NoError(t, err)
}

func TestPurgeRawRemovesAKeyNatsGoRefuses(t *testing.T) {
	js := natstest.New(t).JetStream()
	s := open(t, js, nil)
	ctx := t.Context()
	_, err := js.Publish(ctx, "$KV.counters.r-ü", []byte(`{"n":1}`))
	require.NoError(t, err)
	keys, err := s.Keys(ctx, ">")
	require.NoError(t, err)
	require.Equal(t, []string{"r-ü"}, keys, "a watch sees the key")
	require.ErrorIs(t, s.Delete(ctx, "r-ü", 0), kvstore.ErrInvalidKey, "nats.go cannot address it")
	invalid := 0
	require.NoError(t, s.Scan(ctx, ">", func(_ string, _ counter, _ uint64, err error) {
		assert.ErrorIs(t, err, kvstore.ErrInvalid)
		invalid++
	}))
	assert.Equal(t, 1, invalid, "the scan reports the key as invalid")
	require.NoError(t, s.PurgeRaw(ctx, "r-ü"))
	keys, err = s.Keys(ctx, ">")
	require.NoError(t, err)
	assert.Empty(t, keys)
	assert.ErrorIs(t, s.PurgeRaw(ctx, "a b"), kvstore.ErrInvalidKey)
}

func TestAnIgnoredFieldKeepsTheValueAndIsReported(t *testing.T) {
	js := natstest.New(t).JetStream()
	rec := &fakeRecorder{}
	b, err := kvstore.Open(t.Context(), js, spec("claims"), kvstore.WithRecorder(rec))
	require.NoError(t, err)
	s := kvstore.For(b, kvstore.Codec[counter]{Decode: func(e kvstore.Entry) (counter, error) {
		var c counter
		_ = json.Unmarshal(e.Value, &c)
		if c.N > 10 {
			return counter{}, kvstore.Ignore("n", "%d is too far ahead", c.N)
		}
		return c, nil
	}})
	_, err = s.KV().Put(t.Context(), "a", []byte(`{"n":11}`))
	require.NoError(t, err)
	v, _, err := s.Get(t.Context(), "a")
	require.NoError(t, err)
	assert.Equal(t, counter{}, v)
	require.Len(t, rec.all(), 1)
	assert.Contains(t, rec.all()[0].cause, "n: 11 is too far ahead; treated as absent")
	got := b.Report(t.Context(), "b", 9, "version", "ahead of its aggregate")
	assert.ErrorIs(t, got, kvstore.ErrInvalid)
	assert.Len(t, rec.all(), 2)
}
