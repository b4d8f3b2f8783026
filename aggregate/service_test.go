package aggregate_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/amends-dev/amends/internal/fakeclock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// countingStore counts the reads a Service makes.
type countingStore struct {
	Store
	lastCalls, loadCalls atomic.Int64
}

func (c *countingStore) LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error) {
	c.lastCalls.Add(1)
	return c.Store.LoadLast(ctx, a)
}

func (c *countingStore) Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error) {
	c.loadCalls.Add(1)
	return c.Store.Load(ctx, a, from)
}

// newClock is a settable clock at ms.
func newClock(ms int64) *fakeclock.Clock { return fakeclock.At(ms) }

func newJSStore(t testing.TB) *jsstore.Store {
	t.Helper()
	st, err := jsstore.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	return st
}

func TestServiceRunsCommandsAndStoresAudit(t *testing.T) {
	store := newJSStore(t)
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	id := RecordID(evtID.ID, fn)

	res, err := svc.Execute(t.Context(), id, create, Meta{Actor: "recorder", TraceID: "trace-1", RequestID: "req-1"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Version)
	assert.Equal(t, StatusFailed, res.State.Status)
	assert.Equal(t, id, res.State.ID)
	require.Len(t, res.Events, 1)

	clock.SetMillis(t0 + 1000)
	res, err = svc.Execute(t.Context(), id, ForcePrepareCompensation{}, Meta{Actor: "alice", Reason: "supplier fixed the API", CommandID: "cmd-force-1"})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Version)
	assert.Equal(t, int32(1), res.State.Attempt())

	got, version, err := svc.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, res.State, got)
	assert.Equal(t, uint64(2), version)

	streams, err := store.Load(t.Context(), RecordAggregate(id), 1)
	require.NoError(t, err)
	require.Len(t, streams, 2)
	assert.Equal(t, map[string]string{HeaderCommand: NameCreateExecutionFailed, HeaderActor: "recorder"}, streams[0].Headers)
	assert.Equal(t, "trace-1", streams[0].TraceID)
	assert.Equal(t, "req-1", streams[0].RequestID)
	assert.Equal(t, map[string]string{HeaderCommand: NameForcePrepareCompensation, HeaderActor: "alice", HeaderReason: "supplier fixed the API"}, streams[1].Headers)
	assert.Equal(t, "cmd-force-1", streams[1].CommandID)
	assert.Equal(t, t0+1000, streams[1].CreateTime)
	assert.Equal(t, NameCompensationPrepared, streams[1].Events[0].Name)
}

func TestServiceRejectionsWriteNothing(t *testing.T) {
	store := newJSStore(t)
	svc := NewService(store, WithClock(newClock(t0)))
	_, err := svc.Execute(t.Context(), "missing", PrepareCompensation{}, Meta{})
	require.ErrorIs(t, err, ErrNotFound)
	assert.EqualError(t, err, "ExecutionFailed missing not found.")
	_, _, err = svc.Get(t.Context(), "missing")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = svc.Execute(t.Context(), "", PrepareCompensation{}, Meta{})
	assert.ErrorIs(t, err, ErrIllegalArgument)
	assert.EqualError(t, err, "ExecutionFailed id is empty; it must be 1 to 256 bytes of UTF-8 text", "one message, without the event store's sentinel")

	_, err = svc.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	_, err = svc.Execute(t.Context(), "r", ApplyExecutionSuccess{ExecuteAt: t0}, Meta{})
	require.ErrorIs(t, err, ErrIllegalState)
	_, err = svc.Execute(t.Context(), "r", create, Meta{})
	require.ErrorIs(t, err, ErrAlreadyRecorded)
	_, version, err := svc.Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), version, "rejected commands appended nothing")
}

func TestServiceCommandIDMakesRetriesIdempotent(t *testing.T) {
	store := newJSStore(t)
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	_, err := svc.Execute(t.Context(), "r", create, Meta{CommandID: "create-1"})
	require.NoError(t, err)
	first, err := svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{CommandID: "prep-1"})
	require.NoError(t, err)

	again, err := svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{CommandID: "prep-1"})
	require.NoError(t, err, "a retried command is not rejected")
	assert.True(t, again.Duplicate)
	assert.Equal(t, first.State, again.State)
	assert.Equal(t, first.Version, again.Version)
	assert.Empty(t, again.Events)

	// Still recognised after a later command.
	_, err = svc.Execute(t.Context(), "r", ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 5}, Meta{CommandID: "fail-1"})
	require.NoError(t, err)
	late, err := svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{CommandID: "prep-1"})
	require.NoError(t, err)
	assert.True(t, late.Duplicate, "prep-1 is not prepared a second time")
	assert.Equal(t, uint64(3), late.Version)

	dup, err := svc.Execute(t.Context(), "r", create, Meta{CommandID: "create-1"})
	require.NoError(t, err)
	assert.True(t, dup.Duplicate, "a retried create is a duplicate, not ErrAlreadyRecorded")
}

// Eight operators press Prepare at once, round after round: each eligible
// state yields exactly one CompensationPrepared.
func TestConcurrentPrepareYieldsOnePreparation(t *testing.T) {
	store := newJSStore(t)
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	_, err := svc.Execute(t.Context(), "hot", create, Meta{})
	require.NoError(t, err)
	const rounds, racers = 5, 8
	for round := range rounds {
		var wins, rejections atomic.Int64
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				_, err := svc.Execute(t.Context(), "hot", PrepareCompensation{}, Meta{Actor: "operator"})
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, ErrIllegalState):
					rejections.Add(1)
				default:
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int64(1), wins.Load(), "round %d: exactly one prepare wins", round)
		require.Equal(t, int64(racers-1), rejections.Load(), "round %d: the others see the record prepared", round)
		clock.SetMillis(t0 + int64(round+1)*10_000)
		_, err := svc.Execute(t.Context(), "hot", ApplyExecutionFailed{Error: boom, ExecuteAt: clock.Now().UnixMilli(), Attempt: int32(round + 1)}, Meta{})
		require.NoError(t, err)
	}
	streams, err := store.Load(t.Context(), RecordAggregate("hot"), 1)
	require.NoError(t, err)
	prepared := 0
	for _, s := range streams {
		for _, e := range s.Events {
			if e.Name == NameCompensationPrepared {
				prepared++
			}
		}
	}
	assert.Equal(t, rounds, prepared, "one CompensationPrepared per round")
	assert.Len(t, streams, 1+2*rounds)
}

func TestServiceReadsOneStreamWhateverTheHistory(t *testing.T) {
	store := &countingStore{Store: newJSStore(t)}
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	_, err := svc.Execute(t.Context(), "long", create, Meta{})
	require.NoError(t, err)
	for i := range 30 {
		_, err := svc.Execute(t.Context(), "long", MarkRecoverable{Recoverable: []Recoverability{Recoverable, Unrecoverable}[i%2]}, Meta{})
		require.NoError(t, err)
	}
	store.lastCalls.Store(0)
	// A Service that has not seen the record yet reads it.
	res, err := NewService(store, WithClock(clock)).Execute(t.Context(), "long", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, uint64(32), res.Version)
	assert.Equal(t, int64(1), store.lastCalls.Load(), "one read of the last stream")
	assert.Zero(t, store.loadCalls.Load(), "no history replay")
}

func TestServiceReplaysStreamsWithoutCarriedState(t *testing.T) {
	store := newJSStore(t)
	svc := NewService(store, WithClock(newClock(t0)))
	_, body, err := EncodeEvent(ExecutionFailedCreated{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: DefaultRetrySpec,
		RetryState: RetryState{RetryAt: t0, TimeoutAt: t0 + 120_000, NextRetryAt: t0 + 180_000}, Recoverable: Recoverable})
	require.NoError(t, err)
	_, err = store.Append(t.Context(), eventstore.Stream{
		ID: "foreign-1", Aggregate: RecordAggregate("foreign"), CommandID: "c-1", CreateTime: t0,
		Events: []eventstore.Event{{ID: "e-1", Name: NameExecutionFailedCreated, Body: body}},
	}, 0)
	require.NoError(t, err)
	res, err := svc.Execute(t.Context(), "foreign", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, StatusPrepared, res.State.Status)
	assert.Equal(t, Recoverable, res.State.Recoverable, "the state was rebuilt from the events")
	dup, err := svc.Execute(t.Context(), "foreign", create, Meta{CommandID: "c-1"})
	require.NoError(t, err)
	assert.True(t, dup.Duplicate, "command ids are recovered from the history too")
}

// conflictingStore loses every race.
type conflictingStore struct{ Store }

func (c conflictingStore) Append(_ context.Context, s eventstore.Stream, v uint64) (eventstore.Stream, error) {
	return eventstore.Stream{}, &eventstore.ConflictError{Aggregate: s.Aggregate, Expected: v, Actual: v + 1}
}

func TestServiceGivesUpAfterBoundedConflicts(t *testing.T) {
	store := newJSStore(t)
	svc := NewService(conflictingStore{store}, WithConflictRetries(3))
	_, err := svc.Execute(t.Context(), "r", create, Meta{})
	require.ErrorIs(t, err, eventstore.ErrConflict)
	assert.ErrorContains(t, err, "create_execution_failed on ExecutionFailed r lost 4 races in a row; try again")
}

func TestCreateAppendsWithoutReadingFirst(t *testing.T) {
	store := &countingStore{Store: newJSStore(t)}
	svc := NewService(store, WithClock(newClock(t0)))
	res, err := svc.Execute(t.Context(), "new", create, Meta{CommandID: "c-1"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Version)
	assert.Zero(t, store.lastCalls.Load(), "a new record is created without a read")

	_, err = svc.Execute(t.Context(), "new", create, Meta{})
	require.ErrorIs(t, err, ErrAlreadyRecorded, "an existing record is read after the conflict and decided")
	assert.Equal(t, int64(1), store.lastCalls.Load())
	again, err := svc.Execute(t.Context(), "new", create, Meta{CommandID: "c-1"})
	require.NoError(t, err)
	assert.True(t, again.Duplicate, "a retried creation is recognised by its command id")
}

// A Service keeps the records it decoded; a change by another instance
// must still be seen, because the store reports the new last stream.
func TestServicesSeeEachOthersChanges(t *testing.T) {
	store := newJSStore(t)
	clock := newClock(t0)
	a, b := NewService(store, WithClock(clock)), NewService(store, WithClock(clock))
	_, err := a.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	_, err = a.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	_, err = b.Execute(t.Context(), "r", ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 1}, Meta{})
	require.NoError(t, err, "b loads the record a prepared")
	res, err := a.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	require.NoError(t, err, "a sees the failure b applied, not its own cached PREPARED state")
	assert.Equal(t, int32(2), res.State.Attempt())
	assert.Equal(t, uint64(4), res.Version)
	got, version, err := a.Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, res.State, got)
	assert.Equal(t, uint64(4), version)
}

// A refusal by the Service says why: the state it decided on, at the
// clock's time, and which replay command is accepted instead.
func TestServiceRefusalsCarryTheirState(t *testing.T) {
	store := newJSStore(t)
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	limited := create
	limited.RetrySpec = &RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1}
	_, err := svc.Execute(t.Context(), "r", limited, Meta{})
	require.NoError(t, err)
	clock.SetMillis(t0 + 1000)
	_, err = svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	_, err = svc.Execute(t.Context(), "r", ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 1500}, Meta{})
	require.NoError(t, err)

	_, err = svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.EqualError(t, err, "ExecutionFailed can not retry.")
	assert.Equal(t, map[string]any{
		"status": "FAILED", "retries": int32(1), "maxRetries": int32(1),
		"timeoutAt": t0 + 2000, "nextRetryAt": t0 + 3000, "recoverable": "UNKNOWN",
		"accepted": []string{NameForcePrepareCompensation},
	}, e.Details(), "an exhausted record: force prepare is what is accepted")

	_, err = svc.Execute(t.Context(), "r", ForcePrepareCompensation{}, Meta{Reason: "fixed"})
	require.NoError(t, err)
	_, err = svc.Execute(t.Context(), "r", ApplyExecutionSuccess{ExecuteAt: t0 + 1600}, Meta{})
	require.NoError(t, err)
	_, err = svc.Execute(t.Context(), "r", ForcePrepareCompensation{}, Meta{})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "SUCCEEDED", e.Details()["status"])
	assert.Equal(t, []string{}, e.Details()["accepted"], "nothing replays a SUCCEEDED record")

	_, err = svc.Execute(t.Context(), "missing", PrepareCompensation{}, Meta{})
	require.ErrorAs(t, err, &e)
	assert.Nil(t, e.Details(), "a missing record has no state")
}

func TestServiceUsesAnInjectedZeroSpec(t *testing.T) {
	svc := NewService(newJSStore(t), WithClock(newClock(t0)), WithDefaultRetrySpec(RetrySpec{}))
	res, err := svc.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	assert.Equal(t, RetrySpec{}, res.State.RetrySpec, "0/0/0 was injected and is not the default 10/180/120")
	assert.Equal(t, RetryState{RetryAt: t0, TimeoutAt: t0, NextRetryAt: t0}, res.State.RetryState)
	assert.False(t, res.State.IsBelowRetryThreshold(), "0 retries: only force prepare replays it")
}

// A replay of attempt 1 that finishes after the record succeeded, was
// re-opened and prepared its new attempt 1 is stale: the Service fences it
// by the prepare's version.
func TestServiceFencesResultsAcrossAReopen(t *testing.T) {
	store := newJSStore(t)
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	exec := func(c Command) Result {
		t.Helper()
		res, err := svc.Execute(t.Context(), "r", c, Meta{})
		require.NoError(t, err)
		return res
	}
	exec(create)
	old := exec(PrepareCompensation{})
	require.Equal(t, uint64(2), old.Version)
	require.Equal(t, uint64(2), old.State.PreparedVersion)
	exec(ApplyExecutionSuccess{ExecuteAt: t0 + 1, Attempt: 1, PreparedVersion: 2})
	exec(create) // re-opened at v4
	cur := exec(PrepareCompensation{})
	require.Equal(t, int32(1), cur.State.Attempt(), "attempts start again at 1")
	require.Equal(t, uint64(5), cur.State.PreparedVersion)

	_, err := svc.Execute(t.Context(), "r", ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 2, Attempt: 1, PreparedVersion: old.Version}, Meta{})
	require.ErrorIs(t, err, ErrStaleAttempt, "the old attempt 1 must not settle the new one")
	s, _, err := svc.Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, StatusPrepared, s.Status)
	assert.Equal(t, uint64(5), s.PreparedVersion, "carried with the state")

	fresh := NewService(store, WithClock(clock)) // no cache: reads the carried state
	_, err = fresh.Execute(t.Context(), "r", ApplyExecutionSuccess{ExecuteAt: t0 + 2, Attempt: 1, PreparedVersion: old.Version}, Meta{})
	require.ErrorIs(t, err, ErrStaleAttempt)
	res, err := fresh.Execute(t.Context(), "r", ApplyExecutionSuccess{ExecuteAt: t0 + 3, Attempt: 1, PreparedVersion: cur.Version}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, StatusSucceeded, res.State.Status)
}

// A PREPARED state carried without its prepared version (written before
// the Service recorded it) is completed from the history.
func TestServiceLearnsThePreparedVersionOfAnOlderStream(t *testing.T) {
	store := newJSStore(t)
	rs, err := NextRetryState(DefaultRetrySpec, 1, t0+1000)
	require.NoError(t, err)
	createdEvent := created(DefaultRetrySpec, 0)[0]
	preparedEvent := CompensationPrepared{EventID: evtID, Function: fn, RetryState: rs}
	old := given(createdEvent, preparedEvent) // PreparedVersion 0, as older Services carried it
	for v, e := range []Event{createdEvent, preparedEvent} {
		name, body, err := EncodeEvent(e)
		require.NoError(t, err)
		st, err := json.Marshal(map[string]any{"state": EvolveAll(State{ID: "r"}, []Event{createdEvent, preparedEvent}[:v+1]...)})
		require.NoError(t, err)
		_, err = store.Append(t.Context(), eventstore.Stream{
			ID: "s-" + name, Aggregate: RecordAggregate("r"), Version: uint64(v + 1), CommandID: "c-" + name, CreateTime: t0,
			Events: []eventstore.Event{{ID: "e-" + name, Name: name, Body: body}}, State: st,
		}, uint64(v))
		require.NoError(t, err)
	}
	require.Zero(t, old.PreparedVersion)
	svc := NewService(store, WithClock(newClock(t0+2000)))
	s, _, err := svc.Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), s.PreparedVersion, "learned from the history")
	_, err = svc.Execute(t.Context(), "r", ApplyExecutionSuccess{ExecuteAt: t0 + 2000, Attempt: 1, PreparedVersion: 7}, Meta{})
	assert.ErrorIs(t, err, ErrStaleAttempt)
}

// A Service decides on the record it holds without reading it first; the
// append's expected version catches a record another Service moved on,
// which is then read and decided again.
func TestServiceDecidesOnTheRecordItHoldsWithoutReading(t *testing.T) {
	js := newJSStore(t)
	store := &countingStore{Store: js}
	clock := newClock(t0)
	a, b := NewService(store, WithClock(clock)), NewService(js, WithClock(clock))
	_, err := a.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	res, err := a.Execute(t.Context(), "r", ApplyRetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Version)
	assert.Zero(t, store.lastCalls.Load(), "the record a appended is not read back")

	_, err = b.Execute(t.Context(), "r", MarkRecoverable{Recoverable: Unrecoverable}, Meta{})
	require.NoError(t, err)
	res, err = a.Execute(t.Context(), "r", ApplyRetrySpec{MaxRetries: 7, MinBackoff: 60, ExecutionTimeout: 30}, Meta{CommandID: "spec-7"})
	require.NoError(t, err, "a's append at version 2 conflicts; a reads version 3 and decides again")
	assert.Equal(t, int64(1), store.lastCalls.Load(), "one read, after the conflict")
	assert.Equal(t, uint64(4), res.Version)
	assert.Equal(t, Unrecoverable, res.State.Recoverable, "b's change is kept")
	assert.Equal(t, int32(7), res.State.RetrySpec.MaxRetries)
	streams, err := js.Load(t.Context(), RecordAggregate("r"), 1)
	require.NoError(t, err)
	require.Len(t, streams, 4, "nothing was appended by the conflicting attempt")

	_, err = b.Execute(t.Context(), "r", MarkRecoverable{Recoverable: Recoverable}, Meta{})
	require.NoError(t, err)
	dup, err := a.Execute(t.Context(), "r", ApplyRetrySpec{MaxRetries: 7, MinBackoff: 60, ExecutionTimeout: 30}, Meta{CommandID: "spec-7"})
	require.NoError(t, err)
	assert.True(t, dup.Duplicate, "the command id a holds is recognised")
	assert.Equal(t, uint64(5), dup.Version, "a duplicate reports the record as it is now, not as a held it")
	assert.Equal(t, Recoverable, dup.State.Recoverable)
}

// lossyStore commits the first append it is asked for and reports it
// failed, as when the acknowledgement is lost.
type lossyStore struct {
	Store
	lost atomic.Bool
}

func (l *lossyStore) Append(ctx context.Context, s eventstore.Stream, v uint64) (eventstore.Stream, error) {
	st, err := l.Store.Append(ctx, s, v)
	if err == nil && l.lost.CompareAndSwap(false, true) {
		return eventstore.Stream{}, errors.New("acknowledgement lost")
	}
	return st, err
}

// A command retried after its acknowledgement was lost returns what its
// first attempt committed, decided at that time, not a decision at the
// time of the retry.
func TestServiceRetryAfterALostAckReturnsTheCommittedRecord(t *testing.T) {
	js := newJSStore(t)
	clock := newClock(t0)
	_, err := NewService(js, WithClock(clock)).Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	lossy := &lossyStore{Store: js}
	svc := NewService(lossy, WithClock(clock))
	_, _, err = svc.Get(t.Context(), "r")
	require.NoError(t, err)
	_, err = svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{CommandID: "prep-1"})
	require.ErrorContains(t, err, "acknowledgement lost")
	clock.SetMillis(t0 + 60_000)
	res, err := svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{CommandID: "prep-1"})
	require.NoError(t, err)
	assert.True(t, res.Duplicate, "the first attempt committed")
	stored, version, err := NewService(js).Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), version)
	assert.Equal(t, stored, res.State, "the state the first attempt committed")
	got, _, err := svc.Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, stored, got, "and the state the Service keeps")
}

// A record the Service saw more than 10 s ago is read before a command is
// decided on it (another writer has likely moved it); a read makes it
// recent again.
func TestServiceReadsARecordItSawLongAgo(t *testing.T) {
	store := &countingStore{Store: newJSStore(t)}
	clock := newClock(t0)
	svc := NewService(store, WithClock(clock))
	_, err := svc.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	clock.SetMillis(t0 + 10_001)
	_, err = svc.Execute(t.Context(), "r", MarkRecoverable{Recoverable: Unrecoverable}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), store.lastCalls.Load(), "read before deciding")

	clock.SetMillis(t0 + 30_000)
	_, _, err = svc.Get(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, int64(2), store.lastCalls.Load())
	clock.SetMillis(t0 + 39_000)
	res, err := svc.Execute(t.Context(), "r", MarkRecoverable{Recoverable: Recoverable}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), store.lastCalls.Load(), "the read 9 s ago found it unchanged: no read")
	assert.Equal(t, uint64(3), res.Version)
}

// statelessStore stores streams without the state the Service puts on
// them, as an older writer did.
type statelessStore struct{ Store }

func (s statelessStore) Append(ctx context.Context, st eventstore.Stream, v uint64) (eventstore.Stream, error) {
	st.State = nil
	return s.Store.Append(ctx, st, v)
}

// A store that returns the stream without its state is no sign of an
// earlier attempt: the command's own result comes back.
func TestServiceOnAStoreWithoutStateReturnsItsResult(t *testing.T) {
	svc := NewService(statelessStore{newJSStore(t)}, WithClock(newClock(t0)))
	res, err := svc.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	assert.False(t, res.Duplicate)
	assert.Len(t, res.Events, 1)
	res, err = svc.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	assert.False(t, res.Duplicate)
	assert.Equal(t, StatusPrepared, res.State.Status)
}
