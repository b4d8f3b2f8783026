package circuit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
)

const waitFor, tick = 20 * time.Second, 5 * time.Millisecond

var errDown = errors.New("smtp 451: mail service unavailable")

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t *testing.T) *circuit.Store {
	t.Helper()
	js := natstest.New(t).JetStream()
	st, err := circuit.OpenStore(t.Context(), js)
	require.NoError(t, err)
	return st
}

// instance runs a Set of one instance on store (nil: alone) with one
// breaker of mailer.
func instance(t *testing.T, store *circuit.Store, name string, clock *fakeclock.Clock, p circuit.Policy) *circuit.Breaker {
	t.Helper()
	set := circuit.NewSet(store, mailer.Context, name, quiet(), clock)
	b, err := set.Breaker(mailer, p)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = set.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-set.Ready():
	case <-time.After(waitFor):
		t.Fatal("the set did not load its circuits")
	}
	return b
}

func fail(b *circuit.Breaker, now time.Time, n int) {
	for range n {
		tk, refused := b.Allow(context.Background(), now, circuit.Call{})
		if refused != nil {
			return
		}
		b.Done(context.Background(), now, tk, circuit.Outcome{Err: errDown, Counted: true, Last: func() circuit.Failure { return smtp }})
	}
}

func succeed(b *circuit.Breaker, now time.Time) (circuit.Ticket, bool) {
	tk, refused := b.Allow(context.Background(), now, circuit.Call{})
	if refused != nil {
		return tk, false
	}
	b.Done(context.Background(), now, tk, circuit.Outcome{})
	return tk, true
}

// Given a closed circuit, when 19 calls in a row fail it stays closed;
// when the 20th fails it opens, in the bucket, with the numbers; then
// calls are refused with the last failure, and the refusals are counted
// in the bucket.
func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	store := openStore(t)
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, store, "i1", clock, circuit.Policy{})
	fail(b, clock.Now(), 19)
	assert.True(t, b.Passing(), "19 failures do not open it")
	_, _, err := store.Get(t.Context(), mailer)
	require.ErrorIs(t, err, circuit.ErrNotFound, "nothing written while closed")
	fail(b, clock.Now(), 1)
	require.False(t, b.Passing(), "the 20th opens it")
	st, _, err := store.Get(t.Context(), mailer)
	require.NoError(t, err)
	assert.Equal(t, circuit.Open, st.Phase)
	tr, _ := st.LastTransition()
	assert.Equal(t, circuit.CauseConsecutive, tr.Cause)
	assert.Equal(t, 20, tr.Failures)
	assert.Equal(t, "i1", tr.Instance)
	assert.Equal(t, smtp.Message, st.Last.Message)
	assert.Equal(t, smtp.Fingerprint, st.Last.Fingerprint)

	_, refused := b.Allow(t.Context(), clock.Now(), circuit.Call{})
	require.NotNil(t, refused, "an open circuit refuses")
	assert.Equal(t, circuit.ErrorCode, refused.Code())
	assert.ErrorIs(t, refused, circuit.ErrOpen)
	assert.Equal(t, smtp, circuit.Failure{Code: refused.Last.Code, Message: refused.Last.Message, Fingerprint: refused.Last.Fingerprint, Recoverable: refused.Last.Recoverable})
	require.Eventually(t, func() bool {
		st, _, err := store.Get(t.Context(), mailer)
		return err == nil && st.Refused == 1 && st.RefusedTotal == 1
	}, waitFor, tick, "the refused call is counted in the bucket")
}

// Given a closed circuit with a high consecutive threshold, when of at
// least MinCalls distinct events in the window a share above FailureRatio
// fails with confidence (22 of 24), it opens by the ratio; 18 of 20 and 21
// of 23 do not open it, and calls outside the window do not count.
func TestBreakerOpensOnTheFailureRatio(t *testing.T) {
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, nil, "i1", clock, circuit.Policy{ConsecutiveFailures: 1000, MinCalls: 20, FailureRatio: 0.5, Window: 10 * time.Second})
	// 20 calls, 19 failing, long ago: out of the window.
	succeed(b, clock.Now())
	fail(b, clock.Now(), 18)
	clock.Set(clock.Now().Add(time.Minute))
	succeed(b, clock.Now())
	succeed(b, clock.Now())
	fail(b, clock.Now(), 18)
	assert.True(t, b.Passing(), "18 of 20 failed: not surely more than half")
	fail(b, clock.Now(), 3)
	require.True(t, b.Passing(), "21 of 23")
	fail(b, clock.Now(), 1)
	require.False(t, b.Passing(), "22 of 24 failed")
	tr, _ := b.State().LastTransition()
	assert.Equal(t, circuit.CauseRatio, tr.Cause)
	assert.Equal(t, 22, tr.Failures)
	assert.Equal(t, 24, tr.Calls)
}

// Failures the classification calls UNRECOVERABLE are about the event,
// not the dependency: they never open the circuit.
func TestBreakerIgnoresUncountedFailures(t *testing.T) {
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, nil, "i1", clock, circuit.Policy{})
	for range 100 {
		tk, refused := b.Allow(t.Context(), clock.Now(), circuit.Call{})
		require.Nil(t, refused)
		b.Done(t.Context(), clock.Now(), tk, circuit.Outcome{Err: errors.New("invalid address"), Counted: false})
	}
	assert.True(t, b.Passing())
}

// Two instances share the circuit: when one opens it the other refuses
// too; after the cool-down exactly one of them gets the probe; a failed
// probe (one is enough with ProbeFailures 1) opens it again with twice
// the cool-down; the successes close it for both.
func TestBreakerSharedByInstances(t *testing.T) {
	store := openStore(t)
	clock := fakeclock.At(t0.UnixMilli())
	p := circuit.Policy{CoolDown: 10 * time.Second, Successes: 2, ProbeFailures: 1}
	a := instance(t, store, "a", clock, p)
	b := instance(t, store, "b", clock, p)
	fail(a, clock.Now(), 20)
	require.False(t, a.Passing())
	require.Eventually(t, func() bool { return !b.Passing() }, waitFor, tick, "b sees the circuit a opened")
	_, refused := b.Allow(t.Context(), clock.Now(), circuit.Call{})
	require.NotNil(t, refused, "b refuses too")

	clock.Set(clock.Now().Add(10 * time.Second))
	var probes atomic.Int32
	var wg sync.WaitGroup
	tickets := make(chan circuit.Ticket, 20)
	for _, br := range []*circuit.Breaker{a, b, a, b, a, b} {
		wg.Go(func() {
			tk, refused := br.Allow(context.Background(), clock.Now(), circuit.Call{})
			if refused == nil {
				probes.Add(1)
				require.True(t, tk.Probe(), "a call let through while open is the probe")
				tickets <- tk
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), probes.Load(), "one probe across both instances")
	tk := <-tickets
	st, _, err := store.Get(t.Context(), mailer)
	require.NoError(t, err)
	require.Equal(t, circuit.HalfOpen, st.Phase)
	prober := a
	if st.Probe.Instance == "b" {
		prober = b
	}
	prober.Done(t.Context(), clock.Now(), tk, circuit.Outcome{Err: errDown, Counted: true})
	st, _, err = store.Get(t.Context(), mailer)
	require.NoError(t, err)
	require.Equal(t, circuit.Open, st.Phase, "the failed probe re-opened it")
	assert.Equal(t, int64(20000), st.CoolDownMs, "with twice the cool-down")

	clock.Set(clock.Now().Add(20 * time.Second))
	require.Eventually(t, func() bool { return b.State().Phase == circuit.Open && b.State().CoolDownMs == 20000 }, waitFor, tick)
	for i := range 2 {
		tk, ok := succeed(b, clock.Now())
		require.True(t, ok, "probe %d goes through", i+1)
		require.True(t, tk.Probe())
	}
	assert.True(t, b.Passing(), "two successful probes close it")
	require.Eventually(t, a.Passing, waitFor, tick, "a sees it closed")
	st, _, err = store.Get(t.Context(), mailer)
	require.NoError(t, err)
	assert.Equal(t, circuit.Closed, st.Phase)
	assert.NotZero(t, st.Incident.To, "the incident ended")
	assert.Equal(t, circuit.Counts{Opened: 2, HalfOpened: 2, Closed: 1}, st.Counts)
}

// A call that succeeds after a streak of failures too short to open the
// circuit (at least half of ConsecutiveFailures distinct events) reports
// the incident, while the circuit stays closed; a shorter streak, or
// failures that successes interleave, report none.
func TestBreakerReportsRecovery(t *testing.T) {
	store := openStore(t)
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, store, "i1", clock, circuit.Policy{})
	fail(b, clock.Now(), 9)
	succeed(b, clock.Now())
	_, _, err := store.Get(t.Context(), mailer)
	require.ErrorIs(t, err, circuit.ErrNotFound, "9 in a row: no incident")
	for range 50 {
		fail(b, clock.Now(), 1)
		succeed(b, clock.Now())
	}
	_, _, err = store.Get(t.Context(), mailer)
	require.ErrorIs(t, err, circuit.ErrNotFound, "failures between successes: no incident")

	clock.Set(clock.Now().Add(time.Minute))
	from := clock.Now()
	fail(b, clock.Now(), 10)
	clock.Set(clock.Now().Add(time.Minute))
	succeed(b, clock.Now())
	st, _, err := store.Get(t.Context(), mailer)
	require.NoError(t, err)
	assert.Equal(t, circuit.Closed, st.Phase)
	assert.Equal(t, circuit.Incident{From: from.UnixMilli(), To: clock.Now().UnixMilli()}, st.Incident)
	_, rev, _ := store.Get(t.Context(), mailer)
	succeed(b, clock.Now())
	_, rev2, _ := store.Get(t.Context(), mailer)
	assert.Equal(t, rev, rev2, "a second success reports nothing")
}

// A stored circuit that does not validate is ignored: the function is
// called as if it were closed.
func TestBreakerIgnoresAnInvalidCircuit(t *testing.T) {
	store := openStore(t)
	clock := fakeclock.At(t0.UnixMilli())
	_, err := store.KV().Put(t.Context(), mailer.String(), []byte(`{"function":{"context":"shop","processor":"Mailer","name":"send"},"phase":"OPEN","until":-7}`))
	require.NoError(t, err)
	b := instance(t, store, "i1", clock, circuit.Policy{})
	_, refused := b.Allow(t.Context(), clock.Now(), circuit.Call{})
	assert.Nil(t, refused, "an invalid circuit is no circuit")
	_, _, err = store.Get(t.Context(), mailer)
	assert.ErrorIs(t, err, circuit.ErrInvalid)
	fail(b, clock.Now(), 20)
	st, _, err := store.Get(t.Context(), mailer)
	require.NoError(t, err, "a trip replaces the invalid entry")
	assert.Equal(t, circuit.Open, st.Phase)
}

func TestBreakerOff(t *testing.T) {
	clock := fakeclock.At(t0.UnixMilli())
	b := instance(t, nil, "i1", clock, circuit.Policy{Off: true})
	fail(b, clock.Now(), 1000)
	assert.True(t, b.Passing())
}
