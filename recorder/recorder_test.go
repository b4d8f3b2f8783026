package recorder_test

import (
	"context"
	stderrors "errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

const t0 = int64(1735000000000)

var (
	fn      = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Mailer", Name: "onPlaced"}
	eventID = aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "shop", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 3, Seq: 42}
	errBoom = stderrors.New("boom")
)

// flaky is an Executor in front of the real service whose sends fail while
// failures > 0; lose makes a send succeed but report a failure (a lost
// acknowledgement).
type flaky struct {
	svc      *aggregate.Service
	failures atomic.Int64
	lose     atomic.Int64
	sends    atomic.Int64
}

var errUnavailable = stderrors.New("nats: no responders available for request")

func (f *flaky) Execute(ctx context.Context, id string, c aggregate.Command, m aggregate.Meta) (aggregate.Result, error) {
	f.sends.Add(1)
	if f.failures.Add(-1) >= 0 {
		return aggregate.Result{}, fmt.Errorf("send %d: %w", f.sends.Load(), errUnavailable)
	}
	res, err := f.svc.Execute(ctx, id, c, m)
	if err == nil && f.lose.Add(-1) >= 0 {
		return aggregate.Result{}, errUnavailable
	}
	return res, err
}

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

type fixture struct {
	store  *jsstore.Store
	svc    *aggregate.Service
	exec   *flaky
	rec    *recorder.Recorder
	sleeps *sleeps
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := jsstore.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	svc := aggregate.NewService(store, aggregate.WithClock(aggregate.ClockFunc(func() time.Time { return time.UnixMilli(t0 + 500) })))
	f := &fixture{store: store, svc: svc, exec: &flaky{svc: svc}, sleeps: &sleeps{}}
	f.rec, err = recorder.New(f.exec, recorder.WithSleeper(f.sleeps.sleep))
	require.NoError(t, err)
	return f
}

func failed(err error) processor.Execution {
	f := fn
	return processor.Execution{EventID: eventID, Function: &f, Err: err, ExecuteAt: time.UnixMilli(t0)}
}

func replayed(attempt int32, err error) processor.Execution {
	x := failed(err)
	x.Compensation = &processor.Compensation{ID: aggregate.RecordID(eventID.ID, fn), Attempt: attempt}
	x.ExecuteAt = time.UnixMilli(t0 + 1000)
	return x
}

func (f *fixture) state(t *testing.T) aggregate.State {
	t.Helper()
	st, _, err := f.svc.Get(context.Background(), aggregate.RecordID(eventID.ID, fn))
	require.NoError(t, err)
	return st
}

func (f *fixture) prepare(t *testing.T) int32 {
	t.Helper()
	attempt, _ := f.prepareAt(t)
	return attempt
}

// prepareAt force-prepares the record and returns the attempt and the
// record's version after the prepare, as the processor's replay gets them.
func (f *fixture) prepareAt(t *testing.T) (int32, uint64) {
	t.Helper()
	res, err := f.svc.Execute(context.Background(), aggregate.RecordID(eventID.ID, fn), aggregate.ForcePrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	return res.State.Attempt(), res.Version
}

// replayedAt is the execution of the replay of attempt, prepared at
// version prepared.
func replayedAt(attempt int32, prepared uint64, err error) processor.Execution {
	x := replayed(attempt, err)
	x.Compensation.Prepared = prepared
	return x
}

func record(t *testing.T, f *fixture, x processor.Execution, want processor.Outcome) {
	t.Helper()
	out, err := f.rec.Record(context.Background(), x)
	require.NoError(t, err)
	require.Equal(t, want, out)
}

func TestOutcomes(t *testing.T) {
	f := newFixture(t)
	record(t, f, processor.Execution{EventID: eventID}, processor.OutcomeNone)
	record(t, f, processor.Execution{EventID: eventID, Err: errBoom}, processor.OutcomeUnrecorded)
	waived := failed(errBoom)
	waived.Waived = true
	record(t, f, waived, processor.OutcomeWaived)

	spec := aggregate.RetrySpec{MaxRetries: 2, MinBackoff: 10, ExecutionTimeout: 5}
	first := failed(failure.Recoverable(errBoom))
	first.RetrySpec = &spec
	record(t, f, first, processor.OutcomeRecorded)
	st := f.state(t)
	assert.Equal(t, eventID, st.EventID)
	assert.Equal(t, fn, st.Function)
	assert.Equal(t, spec, st.RetrySpec)
	assert.Equal(t, aggregate.Recoverable, st.Recoverable)
	assert.Equal(t, "boom", st.Error.ErrorMsg)
	assert.Equal(t, t0, st.ExecuteAt)

	record(t, f, failed(errBoom), processor.OutcomeAlreadyRecorded)

	attempt := f.prepare(t)
	record(t, f, replayed(attempt, failure.Unrecoverable(stderrors.New("still down"))), processor.OutcomeApplied)
	st = f.state(t)
	assert.Equal(t, aggregate.StatusFailed, st.Status)
	assert.Equal(t, "still down", st.Error.ErrorMsg)
	assert.Equal(t, aggregate.Unrecoverable, st.Recoverable)

	record(t, f, replayed(attempt, nil), processor.OutcomeStale) // not prepared any more
	attempt = f.prepare(t)
	record(t, f, replayed(attempt-1, nil), processor.OutcomeStale)
	optedOut := replayed(attempt, errBoom)
	optedOut.Waived = true
	record(t, f, optedOut, processor.OutcomeWaived)
	assert.Equal(t, aggregate.StatusPrepared, f.state(t).Status, "a waived replay failure sends nothing")
	success := replayed(attempt, nil)
	success.Waived = true
	record(t, f, success, processor.OutcomeApplied)
	assert.Equal(t, aggregate.StatusSucceeded, f.state(t).Status, "success is applied even for an opted-out function")

	record(t, f, failed(errBoom), processor.OutcomeRecorded) // re-opens the SUCCEEDED record
	assert.Equal(t, aggregate.StatusFailed, f.state(t).Status)

	m := f.rec.Metrics()
	assert.Equal(t, uint64(2), m.Recorded.Load())
	assert.Equal(t, uint64(1), m.AlreadyRecorded.Load())
	assert.Equal(t, uint64(2), m.Applied.Load())
	assert.Equal(t, uint64(2), m.Stale.Load())
	assert.Equal(t, uint64(1), m.Unrecorded.Load())
	assert.Equal(t, uint64(2), m.Waived.Load())
	assert.Equal(t, uint64(2), m.Count(processor.OutcomeStale))
}

func TestSendRetriesThenRecords(t *testing.T) {
	f := newFixture(t)
	f.exec.failures.Store(2)
	record(t, f, failed(errBoom), processor.OutcomeRecorded)
	assert.Equal(t, int64(3), f.exec.sends.Load())
	assert.Equal(t, uint64(2), f.rec.Metrics().SendRetries.Load())
	require.Len(t, f.sleeps.d, 2)
	assert.InDelta(t, 1, f.sleeps.d[0].Seconds(), 0.5, "first backoff 1 s ± jitter")
	assert.InDelta(t, 2, f.sleeps.d[1].Seconds(), 1, "then 2 s ± jitter")
}

func TestLostAckOnApplyIsIdempotent(t *testing.T) {
	f := newFixture(t)
	record(t, f, failed(errBoom), processor.OutcomeRecorded)
	attempt := f.prepare(t)
	f.exec.lose.Store(1)
	record(t, f, replayed(attempt, nil), processor.OutcomeApplied)
	assert.Equal(t, aggregate.StatusSucceeded, f.state(t).Status)
	_, version, err := f.svc.Get(context.Background(), aggregate.RecordID(eventID.ID, fn))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), version, "the retried send was deduplicated by its command id")
}

func TestRecordingFailed(t *testing.T) {
	f := newFixture(t)
	f.exec.failures.Store(1 << 30)
	orig := fmt.Errorf("handler: %w", errBoom)
	out, err := f.rec.Record(context.Background(), failed(orig))
	assert.Equal(t, processor.OutcomeRecordingFailed, out)
	require.Error(t, err)
	assert.Equal(t, int64(recorder.DefaultSendRetries+1), f.exec.sends.Load(), "the first send and 3 retries")
	assert.Len(t, f.sleeps.d, recorder.DefaultSendRetries)
	assert.Equal(t, orig.Error(), err.Error(), "the original error is returned")
	assert.ErrorIs(t, err, errBoom)
	assert.ErrorIs(t, err, recorder.ErrRecordingFailed)
	assert.ErrorIs(t, recorder.SendError(err), errUnavailable, "the last send error is attached")
	assert.Contains(t, recorder.SendError(err).Error(), "send 4")
	assert.Contains(t, fmt.Sprintf("%+v", err), "no responders", "%+v shows the secondary error")

	again, err2 := f.rec.Record(context.Background(), failed(err))
	assert.Equal(t, processor.OutcomeRecordingFailed, again)
	assert.Same(t, err, err2, "the send error is attached once, not again")
	assert.Equal(t, uint64(2), f.rec.Metrics().RecordingFailed.Load())

	// A failed success report returns the send error itself.
	f.exec.failures.Store(0)
	record(t, f, failed(errBoom), processor.OutcomeRecorded)
	attempt := f.prepare(t)
	f.exec.failures.Store(1 << 30)
	out, err = f.rec.Record(context.Background(), replayed(attempt, nil))
	assert.Equal(t, processor.OutcomeRecordingFailed, out)
	assert.ErrorIs(t, err, errUnavailable)
}

func TestNewRejectsNil(t *testing.T) {
	_, err := recorder.New(nil)
	assert.ErrorIs(t, err, recorder.ErrInvalidOption)
	_, err = recorder.New(&flaky{}, recorder.WithSendRetry(-1, processor.Backoff{}))
	assert.ErrorIs(t, err, recorder.ErrInvalidOption)
}

// A record re-opened after it succeeded numbers its attempts from 1 again;
// the result of the new attempt 1 must not be taken for the old one's.
func TestResultsOfAReopenedRecordAreNotDuplicates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	boom := stderrors.New("boom")
	out, err := f.rec.Record(ctx, failed(boom))
	require.NoError(t, err)
	require.Equal(t, processor.OutcomeRecorded, out)
	attempt, prepared := f.prepareAt(t)
	x := replayedAt(attempt, prepared, nil)
	out, err = f.rec.Record(ctx, x)
	require.NoError(t, err)
	require.Equal(t, processor.OutcomeApplied, out)
	require.Equal(t, aggregate.StatusSucceeded, f.state(t).Status)

	out, err = f.rec.Record(ctx, failed(boom))
	require.NoError(t, err)
	require.Equal(t, processor.OutcomeRecorded, out, "the SUCCEEDED record is re-opened")
	attempt, prepared = f.prepareAt(t)
	y := replayedAt(attempt, prepared, nil)
	require.Equal(t, int32(1), y.Compensation.Attempt, "attempts start again at 1")
	out, err = f.rec.Record(ctx, y)
	require.NoError(t, err)
	require.Equal(t, processor.OutcomeApplied, out)
	assert.Equal(t, aggregate.StatusSucceeded, f.state(t).Status, "the new attempt's success was applied, not taken for a duplicate")
}

// A replay of attempt 1 from before a re-open that reports after the
// record's new attempt 1 was prepared is stale: it must not settle it.
func TestResultOfAnAttemptBeforeAReopenIsStale(t *testing.T) {
	for _, result := range []error{nil, errBoom} {
		t.Run(fmt.Sprintf("result %v", result), func(t *testing.T) {
			f := newFixture(t)
			record(t, f, failed(errBoom), processor.OutcomeRecorded)
			oldAttempt, oldPrepared := f.prepareAt(t) // v2; its replay is slow
			_, err := f.svc.Execute(context.Background(), aggregate.RecordID(eventID.ID, fn),
				aggregate.ApplyExecutionSuccess{ExecuteAt: t0 + 1, Attempt: oldAttempt}, aggregate.Meta{}) // settled meanwhile (v3)
			require.NoError(t, err)
			record(t, f, failed(errBoom), processor.OutcomeRecorded) // re-opened (v4)
			newAttempt, newPrepared := f.prepareAt(t)                // v5
			require.Equal(t, oldAttempt, newAttempt, "the same attempt number")

			record(t, f, replayedAt(oldAttempt, oldPrepared, result), processor.OutcomeStale)
			st := f.state(t)
			assert.Equal(t, aggregate.StatusPrepared, st.Status, "the new attempt is still running")
			assert.Equal(t, newPrepared, st.PreparedVersion)

			record(t, f, replayedAt(newAttempt, newPrepared, result), processor.OutcomeApplied)
		})
	}
}
