package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/quarantine"
)

// poisonCount is more than the replay consumer's MaxAckPending (256).
const poisonCount = 300

// publishForgedPrepare publishes a compensation_prepared of function f for
// record id at version 2, which decodes but whose history cannot load: its
// headers point at sequence 1 for version 1, a message of another aggregate
// (or none).
func (e *env) publishForgedPrepare(id string, f aggregate.FunctionInfo) {
	e.t.Helper()
	_, body, err := aggregate.EncodeEvent(aggregate.CompensationPrepared{Function: f, RetryState: aggregate.RetryState{Retries: 1},
		EventID: aggregate.EventID{ID: "evt-" + id, AggregateID: aggregate.WireAggregateID{ContextName: ctxName, AggregateName: "order", AggregateID: "o-" + id}, Version: 1}})
	require.NoError(e.t, err)
	st := eventstore.Stream{ID: "forged-" + id, Aggregate: eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: id},
		Version: 2, CreateTime: t0, Events: []eventstore.Event{{ID: "ev-" + id, Name: aggregate.NameCompensationPrepared, Body: body}}}
	data, err := eventstore.Encode(&st)
	require.NoError(e.t, err)
	subj, err := e.store.Subject(st.Aggregate)
	require.NoError(e.t, err)
	m := nats.NewMsg(subj)
	m.Data = data
	m.Header.Set(jsstore.HeaderVersion, "2")
	m.Header.Set(jsstore.HeaderFirstSeq, "1")
	m.Header.Set(jsstore.HeaderPrevSeqs, "1")
	_, err = e.js.PublishMsg(context.Background(), m)
	require.NoError(e.t, err)
}

// quarantined waits until q lists n entries and returns them.
func quarantined(t testing.TB, q *quarantine.Quarantine, n int) []quarantine.Entry {
	t.Helper()
	var all []quarantine.Entry
	require.Eventually(t, func() bool {
		var err error
		all, err = q.All(context.Background(), quarantine.Query{})
		return err == nil && len(all) >= n
	}, waitFor, 10*time.Millisecond, "%d messages quarantined", n)
	return all
}

// Prepares whose record's history is corrupt are quarantined, and a
// genuine prepare behind hundreds of them is replayed.
func TestReplayQuarantinesCorruptRecords(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	mailer, evt, _ := e.failedMailer(p)

	for i := range poisonCount {
		e.publishForgedPrepare(fmt.Sprintf("forged-%03d", i), info("Mailer", "onPlaced"))
	}
	mailer.succeed()
	e.prepare(aggregate.RecordID(evt, info("Mailer", "onPlaced")), false)
	require.Eventually(t, func() bool { return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, waitFor, tick,
		"the genuine prepare behind the poison is replayed")
	assert.Equal(t, 2, mailer.count(evt))

	entries := quarantined(t, p.Quarantine(), poisonCount)
	require.Len(t, entries, poisonCount)
	for _, q := range entries {
		assert.Equal(t, processor.ReplayDurableName(ctxName), q.Consumer)
		assert.Equal(t, quarantine.ReasonCorrupt, q.Reason, q.Error)
		assert.Equal(t, e.store.StreamName(aggregate.Context), q.Stream)
		assert.Contains(t, q.Subject, "forged-")
		assert.NotZero(t, q.Seq)
	}
	assert.Equal(t, []quarantine.Count{{Consumer: processor.ReplayDurableName(ctxName), Reason: quarantine.ReasonCorrupt, N: poisonCount}}, p.Quarantine().Counts())
	assert.Equal(t, uint64(poisonCount), p.Metrics().Replay.Terminated.Load())
}

// failingRecords is a Records whose reads of one record time out.
type failingRecords struct {
	processor.Records
	id string
}

func (f failingRecords) Get(ctx context.Context, id string) (aggregate.State, uint64, error) {
	if id == f.id {
		return aggregate.State{}, 0, fmt.Errorf("read %s: %w", id, nats.ErrTimeout)
	}
	return f.Records.Get(ctx, id)
}

// A replay that keeps failing with an error that may be transient is
// retried with growing delays, then quarantined; the replays behind it run.
func TestReplayQuarantinesAfterBoundedRetries(t *testing.T) {
	e := newEnv(t)
	stuckEvt := e.emit(order("o-1"), 1, ev("order_placed", struct{}{})).Events[0].ID
	stuck := aggregate.RecordID(stuckEvt, info("Mailer", "onPlaced"))
	retry := quarantine.Retry{First: time.Millisecond, Max: 4 * time.Millisecond, Deliveries: 4}
	p := e.processor(processor.WithRecords(failingRecords{Records: e.svc, id: stuck}), processor.WithReplayRetry(retry))
	mailer := newCounter()
	mailer.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(t, p)
	goodEvt := e.emit(order("o-2"), 1, ev("order_placed", struct{}{})).Events[0].ID
	good := aggregate.RecordID(goodEvt, info("Mailer", "onPlaced"))
	require.Eventually(t, func() bool {
		return e.record(stuckEvt, info("Mailer", "onPlaced")).Status == aggregate.StatusFailed &&
			e.record(goodEvt, info("Mailer", "onPlaced")).Status == aggregate.StatusFailed
	}, waitFor, tick)

	mailer.succeed()
	e.prepare(stuck, false)
	e.prepare(good, false)
	require.Eventually(t, func() bool { return e.record(goodEvt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded }, waitFor, tick)
	entries := quarantined(t, p.Quarantine(), 1)
	require.Len(t, entries, 1)
	assert.Equal(t, quarantine.ReasonRetriesExhausted, entries[0].Reason)
	assert.Equal(t, uint64(4), entries[0].Deliveries)
	assert.Contains(t, entries[0].Error, "timeout")
	assert.Equal(t, aggregate.StatusPrepared, e.record(stuckEvt, info("Mailer", "onPlaced")).Status, "left prepared: it times out and is prepared again")
}

// A message a function consumer cannot decode is quarantined under that
// consumer's name, and the messages behind it are handled.
func TestUndecodableMessageIsQuarantined(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	c := newCounter()
	require.NoError(t, p.Register(fn("Projector", "onAny"), c.handle))
	run(t, p)
	for i := range poisonCount {
		_, err := e.js.Publish(context.Background(), fmt.Sprintf("amends.shop.order.broken-%d", i), []byte("{not json"))
		require.NoError(t, err)
	}
	after := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	require.Eventually(t, func() bool { return c.count(after.Events[0].ID) == 1 }, waitFor, tick, "the event behind the poison is handled")
	entries := quarantined(t, p.Quarantine(), poisonCount)
	require.Len(t, entries, poisonCount)
	for _, q := range entries {
		assert.Equal(t, processor.DurableName(ctxName, "Projector"), q.Consumer)
		assert.Equal(t, quarantine.ReasonUndecodable, q.Reason)
		assert.Equal(t, e.store.StreamName(ctxName), q.Stream)
	}
}
