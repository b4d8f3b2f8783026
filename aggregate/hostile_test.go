package aggregate_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// forgeRecord publishes, around the store, a stream of record id without
// carried state at version with the given position headers, as a buggy
// service or a hand-typed `nats pub` could.
func forgeRecord(t *testing.T, store *jsstore.Store, js jetstream.JetStream, id string, version uint64, first, prevs string) {
	t.Helper()
	_, body, err := EncodeEvent(ExecutionFailedCreated{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: DefaultRetrySpec})
	require.NoError(t, err)
	st := eventstore.Stream{ID: "forged-" + id, Aggregate: RecordAggregate(id), Version: version, CreateTime: t0,
		Events: []eventstore.Event{{ID: "forged-e-" + id, Name: NameExecutionFailedCreated, Body: body}}}
	data, err := eventstore.Encode(&st)
	require.NoError(t, err)
	subj, err := store.Subject(st.Aggregate)
	require.NoError(t, err)
	msg := nats.NewMsg(subj)
	msg.Data = data
	msg.Header.Set(jsstore.HeaderVersion, strconv.FormatUint(version, 10))
	msg.Header.Set(jsstore.HeaderFirstSeq, first)
	msg.Header.Set(jsstore.HeaderPrevSeqs, prevs)
	_, err = js.PublishMsg(t.Context(), msg)
	require.NoError(t, err)
}

// Finding 1 of issue 11: a record's last stream without state made the
// Service load a history sized by its version header (10^12: out of
// memory; 2^64-1: makeslice panic).
func TestServiceRefusesAForgedHugeVersion(t *testing.T) {
	for name, version := range map[string]uint64{"10^12": 1_000_000_000_000, "2^64-1": 1<<64 - 1} {
		t.Run(name, func(t *testing.T) {
			js := natstest.New(t).JetStream()
			store, err := jsstore.New(js)
			require.NoError(t, err)
			svc := NewService(store, WithClock(newClock(t0)))
			_, err = svc.Execute(t.Context(), "genuine", create, Meta{}) // the forged message is not the stream's first
			require.NoError(t, err)
			forgeRecord(t, store, js, "huge", version, "1", "1")

			_, _, err = svc.Get(t.Context(), "huge")
			require.ErrorIs(t, err, eventstore.ErrCorrupt)
			assert.ErrorContains(t, err, jsstore.HeaderVersion)
			_, err = svc.Execute(t.Context(), "huge", PrepareCompensation{}, Meta{})
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "a command on it")
			_, _, err = svc.Get(t.Context(), "genuine")
			assert.NoError(t, err, "other records are unaffected")
		})
	}
}

// Finding 4 of issue 11: a forged v6 of B listing A's sequences made B's
// history A's (Get B returned A's id).
func TestServiceRefusesAHistoryPointingIntoAnotherRecord(t *testing.T) {
	js := natstest.New(t).JetStream()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	svc := NewService(store, WithClock(newClock(t0)))
	// Both records are at version 5: created, prepared, failed, prepared, failed.
	chain := []Command{create, PrepareCompensation{}, ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 1},
		PrepareCompensation{}, ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 2}}
	var seqsA []string // newest first
	for _, id := range []string{"A", "B"} {
		for i, c := range chain {
			res, err := svc.Execute(t.Context(), id, c, Meta{})
			require.NoError(t, err, "%s command %d", id, i)
			require.Equal(t, uint64(i+1), res.Version)
			if id == "A" {
				seqsA = append([]string{strconv.FormatUint(res.Stream.Seq, 10)}, seqsA...)
			}
		}
	}
	_, vb, err := svc.Get(t.Context(), "B")
	require.NoError(t, err)
	forgeRecord(t, store, js, "B", vb+1, seqsA[len(seqsA)-1], strings.Join(seqsA[:vb], ","))

	_, _, err = svc.Get(t.Context(), "B")
	require.ErrorIs(t, err, eventstore.ErrCorrupt, "B's history must not be A's")
	assert.ErrorContains(t, err, "amends.compensation.execution_failed.A", "names the message it found")
	stA, _, err := svc.Get(t.Context(), "A")
	require.NoError(t, err)
	assert.Equal(t, "A", stA.ID)
}

// racingStore appends a stream to the record between the Service's read
// of its last stream and of its history, and can drop a version from the
// history it returns. It hides LoadAt, so the Service uses Load.
type racingStore struct {
	Store
	t       *testing.T
	next    *eventstore.Stream
	dropped uint64
}

func (r *racingStore) LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error) {
	last, err := r.Store.LoadLast(ctx, a)
	if err == nil && r.next != nil {
		_, aerr := r.Store.Append(ctx, *r.next, last.Version)
		require.NoError(r.t, aerr)
		r.next = nil
	}
	return last, err
}

func (r *racingStore) Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error) {
	ss, err := r.Store.Load(ctx, a, from)
	if r.dropped == 0 || err != nil {
		return ss, err
	}
	var out []eventstore.Stream
	for _, s := range ss {
		if s.Version != r.dropped {
			out = append(out, s)
		}
	}
	return out, nil
}

// stateless returns streams of record id without carried state, as another
// writer could append: created, then prepared.
func stateless(t *testing.T, id string) (created, prepared eventstore.Stream) {
	t.Helper()
	_, c, err := EncodeEvent(ExecutionFailedCreated{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: DefaultRetrySpec,
		RetryState: RetryState{RetryAt: t0, TimeoutAt: t0 + 120_000, NextRetryAt: t0 + 180_000}, Recoverable: Recoverable})
	require.NoError(t, err)
	_, p, err := EncodeEvent(CompensationPrepared{EventID: evtID, Function: fn, RetryState: RetryState{RetryAt: t0, TimeoutAt: t0 + 120_000, NextRetryAt: t0 + 180_000}})
	require.NoError(t, err)
	created = eventstore.Stream{ID: id + "-1", Aggregate: RecordAggregate(id), CreateTime: t0,
		Events: []eventstore.Event{{ID: id + "-e1", Name: NameExecutionFailedCreated, Body: c}}}
	prepared = eventstore.Stream{ID: id + "-2", Aggregate: RecordAggregate(id), CreateTime: t0,
		Events: []eventstore.Event{{ID: id + "-e2", Name: NameCompensationPrepared, Body: p}}}
	return created, prepared
}

// A history replayed for a record without carried state is the history
// up to the last stream read: a stream appended in between is not mixed
// into the state of the version before it.
func TestServiceReplaysTheHistoryAsOfTheLastStream(t *testing.T) {
	for name, at := range map[string]bool{"LoadAt": true, "Load": false} {
		t.Run(name, func(t *testing.T) {
			js := natstest.New(t).JetStream()
			store, err := jsstore.New(js)
			require.NoError(t, err)
			created, prepared := stateless(t, "raced")
			_, err = store.Append(t.Context(), created, 0)
			require.NoError(t, err)
			rs := &racingStore{Store: store, t: t, next: &prepared}
			var s Store = rs
			if at {
				s = struct {
					*racingStore
					atLoaderOf
				}{rs, atLoaderOf{store}}
			}
			st, v, err := NewService(s, WithClock(newClock(t0))).Get(t.Context(), "raced")
			require.NoError(t, err)
			assert.Equal(t, uint64(1), v)
			assert.Equal(t, StatusFailed, st.Status, "the state of version 1, not of the version appended after it was read")
		})
	}
}

// atLoaderOf exposes a jsstore's LoadAt.
type atLoaderOf struct{ s *jsstore.Store }

func (a atLoaderOf) LoadAt(ctx context.Context, id eventstore.AggregateID, from, seq uint64) ([]eventstore.Stream, error) {
	return a.s.LoadAt(ctx, id, from, seq)
}

// A store that returns a history with a gap is refused, not evolved.
func TestServiceRefusesAHistoryWithAGap(t *testing.T) {
	js := natstest.New(t).JetStream()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	created, prepared := stateless(t, "gap")
	_, err = store.Append(t.Context(), created, 0)
	require.NoError(t, err)
	_, err = store.Append(t.Context(), prepared, 1)
	require.NoError(t, err)
	_, _, err = NewService(&racingStore{Store: store, t: t, dropped: 1}, WithClock(newClock(t0))).Get(t.Context(), "gap")
	require.Error(t, err)
	assert.ErrorContains(t, err, "the history has version 2 at position 1")
}
