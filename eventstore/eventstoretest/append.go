package eventstoretest

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

// checkAppendAndReadBack: what Append returns is what every read returns.
func checkAppendAndReadBack[M any](t *testing.T, h Harness[M]) {
	s, a := h.Store, agg(typeA, "read-back")
	in := stream(t, a, 1)
	in.RequestID, in.TraceID, in.Headers = "req-1", "trace-1", map[string]string{"actor": "suite"}
	in.Events = append(in.Events, eventstore.Event{ID: newID(), Name: "second", Revision: "2.0.0", Body: json.RawMessage(`{"k":[1,"x"]}`)})
	in.State = json.RawMessage(`{"status":"open"}`)
	got, err := s.Append(ctx(t), in, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got.Version, "Append sets the version")
	assert.NotZero(t, got.Seq, "Append sets the sequence")
	assert.Zero(t, got.PrevSeq, "version 1 has no previous stream")
	want := in
	want.Version, want.Seq, want.TraceParent, want.TraceState = 1, got.Seq, got.TraceParent, got.TraceState
	assert.Equal(t, want, got, "Append returns the stream as given, with its place set")

	last, err := s.LoadLast(ctx(t), a)
	require.NoError(t, err)
	assert.Equal(t, got, last, "LoadLast")
	all, err := s.Load(ctx(t), a, 0)
	require.NoError(t, err)
	assert.Equal(t, []eventstore.Stream{got}, all, "Load from 0")
	v1, err := s.LoadVersion(ctx(t), a, 1)
	require.NoError(t, err)
	assert.Equal(t, got, v1, "LoadVersion")
	bySeq, err := s.GetSeq(ctx(t), suiteContext, got.Seq)
	require.NoError(t, err)
	assert.Equal(t, got, bySeq, "GetSeq")
	at, err := s.LoadAt(ctx(t), a, 1, got.Seq)
	require.NoError(t, err)
	assert.Equal(t, []eventstore.Stream{got}, at, "LoadAt")
	lv, err := s.LastVersion(ctx(t), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), lv, "LastVersion")

	// A CreateTime of 0 is the store's clock; a stream may name its version.
	next := stream(t, a, 2)
	next.CreateTime, next.Version = 0, 2
	c2, err := s.Append(ctx(t), next, 1)
	require.NoError(t, err)
	assert.Positive(t, c2.CreateTime, "a CreateTime of 0 is set by the store")
	l2, err := s.LoadLast(ctx(t), a)
	require.NoError(t, err)
	assert.Equal(t, c2, l2, "the stamped time is stored")
}

// checkConflict: an append at a version the aggregate is not at writes
// nothing and fails with a *ConflictError matching ErrConflict.
func checkConflict[M any](t *testing.T, h Harness[M]) {
	s, a := h.Store, agg(typeA, "conflict")
	first := appendN(t, s, a, 0, 1)[0]
	for _, expected := range []uint64{0, 2, 7} {
		_, err := s.Append(ctx(t), stream(t, a, 99), expected)
		require.ErrorIs(t, err, eventstore.ErrConflict, "append expecting version %d of an aggregate at 1", expected)
		var ce *eventstore.ConflictError
		require.True(t, errors.As(err, &ce), "the conflict is an *eventstore.ConflictError: %v", err)
		assert.Equal(t, a, ce.Aggregate)
		assert.Equal(t, expected, ce.Expected)
		if expected == 0 {
			assert.Equal(t, uint64(1), ce.Actual, "the store reports the version it found")
		}
	}
	_, err := s.Append(ctx(t), stream(t, agg(typeA, "conflict-new"), 1), 3)
	require.ErrorIs(t, err, eventstore.ErrConflict, "an append expecting version 3 of an aggregate that does not exist")
	_, err = s.LoadLast(ctx(t), agg(typeA, "conflict-new"))
	require.ErrorIs(t, err, eventstore.ErrNotFound, "nothing was written for it")
	all, err := s.Load(ctx(t), a, 1)
	require.NoError(t, err)
	assert.Equal(t, []eventstore.Stream{first}, all, "the conflicting appends wrote nothing")
}

// checkIdempotent: appending a stream whose id is committed returns the
// committed stream, once the aggregate moved on too; another stream with
// a used id is refused.
func checkIdempotent[M any](t *testing.T, h Harness[M]) {
	s, a := h.Store, agg(typeA, "idempotent")
	in := stream(t, a, 1)
	first, err := s.Append(ctx(t), in, 0)
	require.NoError(t, err)
	again, err := s.Append(ctx(t), in, 0)
	require.NoError(t, err, "the same stream appended again (a retry after a lost acknowledgement) is no conflict")
	assert.Equal(t, first, again, "the retry returns the stream committed the first time")

	second := appendN(t, s, a, 1, 1)[0]
	late, err := s.Append(ctx(t), in, 0)
	require.NoError(t, err, "a retry of version 1 after version 2 was appended")
	assert.Equal(t, first, late, "it still returns the committed version 1")

	all, err := s.Load(ctx(t), a, 1)
	require.NoError(t, err)
	assert.Equal(t, []eventstore.Stream{first, second}, all, "the retries stored nothing")

	other := stream(t, a, 3)
	other.Events[0].Name = "other"
	other.ID = in.ID
	_, err = s.Append(ctx(t), other, 2)
	require.Error(t, err, "another stream with a used id is refused")
	all, err = s.Load(ctx(t), a, 1)
	require.NoError(t, err)
	assert.Len(t, all, 2, "the stream with a reused id was not written")
}

// checkConcurrentAppends: of concurrent appends at one version exactly one
// wins; writers that reload on conflict all get their streams in, each
// version once.
func checkConcurrentAppends[M any](t *testing.T, h Harness[M]) {
	s, a, c := h.Store, agg(typeB, "concurrent"), ctx(t)
	const writers, each = 8, 4
	// Streams are built here: require may not stop a test from another
	// goroutine.
	first := make([]eventstore.Stream, writers)
	later := make([][]eventstore.Stream, writers)
	for w := range writers {
		first[w] = stream(t, a, w)
		for i := range each {
			later[w] = append(later[w], stream(t, a, 100*(w+1)+i))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() { _, errs[w] = s.Append(c, first[w], 0) })
	}
	wg.Wait()
	won := 0
	for w, err := range errs {
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, eventstore.ErrConflict, "writer %d lost the race with a conflict", w)
	}
	require.Equal(t, 1, won, "exactly one of %d appends at version 0 wins", writers)

	for w := range writers {
		wg.Go(func() {
			for done := 0; done < each; {
				v, err := s.LastVersion(c, a)
				if !assert.NoError(t, err) {
					return
				}
				_, err = s.Append(c, later[w][done], v)
				switch {
				case err == nil:
					done++
				case !errors.Is(err, eventstore.ErrConflict):
					assert.NoError(t, err, "writer %d: an append fails only with a conflict", w)
					return
				}
			}
		})
	}
	wg.Wait()
	all, err := s.Load(ctx(t), a, 1)
	require.NoError(t, err)
	require.Len(t, all, 1+writers*each, "every writer's streams are in")
	seen := map[int]bool{}
	for i, st := range all {
		assert.Equal(t, uint64(i+1), st.Version, "versions are 1, 2, ... without gaps")
		n := body(t, st)
		assert.False(t, seen[n], "stream %d is stored once", n)
		seen[n] = true
		if i > 0 {
			assert.Greater(t, st.Seq, all[i-1].Seq, "sequences grow with versions")
			assert.Equal(t, all[i-1].Seq, st.PrevSeq, "version %d's PrevSeq is version %d's Seq", i+1, i)
		}
	}
}

// checkInvalid: caller mistakes match ErrInvalid, name the field and write
// nothing.
func checkInvalid[M any](t *testing.T, h Harness[M]) {
	s, a := h.Store, agg(typeA, "invalid")
	noEvents := stream(t, a, 1)
	noEvents.Events = nil
	badVersion := stream(t, a, 1)
	badVersion.Version = 5
	badID := stream(t, a, 1)
	badID.ID = ""
	badAgg := stream(t, a, 1)
	badAgg.Aggregate.Type = "no spaces"
	badBody := stream(t, a, 1)
	badBody.Events[0].Body = json.RawMessage(`{"n":`)
	negative := stream(t, a, 1)
	negative.CreateTime = -1
	for name, c := range map[string]struct {
		st   eventstore.Stream
		word string
	}{
		"no events":           {noEvents, "event"},
		"version not next":    {badVersion, "version"},
		"empty stream id":     {badID, "id"},
		"invalid type":        {badAgg, "type"},
		"body not JSON":       {badBody, "body"},
		"negative createTime": {negative, "createTime"},
	} {
		_, err := s.Append(ctx(t), c.st, 0)
		require.ErrorIs(t, err, eventstore.ErrInvalid, name)
		assert.Contains(t, strings.ToLower(err.Error()), strings.ToLower(c.word), "%s: the error names the field", name)
	}
	_, err := s.LoadLast(ctx(t), a)
	require.ErrorIs(t, err, eventstore.ErrNotFound, "no invalid stream was written")

	bad := agg(typeA, "")
	_, err = s.Load(ctx(t), bad, 1)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "Load of an empty aggregate id")
	_, err = s.LoadLast(ctx(t), bad)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "LoadLast of an empty aggregate id")
	_, err = s.LoadVersion(ctx(t), a, 0)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "LoadVersion 0")
	_, err = s.LoadAt(ctx(t), a, 1, 0)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "LoadAt sequence 0")
	_, err = s.GetSeq(ctx(t), suiteContext, 0)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "GetSeq 0")
	_, err = s.GetSeq(ctx(t), "no spaces", 1)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "GetSeq of an invalid context")
}

// checkOversized: a stream the store cannot hold is refused with
// ErrInvalid naming the limit, and nothing is written; one that fits is
// taken.
func checkOversized[M any](t *testing.T, h Harness[M]) {
	if h.MaxStreamBytes == 0 {
		t.Skip("the harness states no size limit")
	}
	s, a := h.Store, agg(typeA, "oversized")
	big := stream(t, a, 1)
	big.Events[0].Body = json.RawMessage(`"` + strings.Repeat("x", h.MaxStreamBytes) + `"`)
	_, err := s.Append(ctx(t), big, 0)
	require.ErrorIs(t, err, eventstore.ErrInvalid, "a stream over the limit")
	assert.Contains(t, err.Error(), strconv.Itoa(h.MaxStreamBytes), "the error names the limit")
	_, err = s.LoadLast(ctx(t), a)
	require.ErrorIs(t, err, eventstore.ErrNotFound, "nothing was written")
	small := stream(t, a, 1)
	small.Events[0].Body = json.RawMessage(`"` + strings.Repeat("x", h.MaxStreamBytes/2) + `"`)
	_, err = s.Append(ctx(t), small, 0)
	require.NoError(t, err, "a stream of half the limit fits")
}
