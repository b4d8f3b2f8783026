package processor_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// forge publishes, around the store, a stream of a at version with the
// given position headers, as a buggy service or a hand-typed `nats pub`
// could, and returns its sequence.
func (e *env) forge(a eventstore.AggregateID, version uint64, first, prevs string, qty int) uint64 {
	e.t.Helper()
	st := eventstore.Stream{ID: uuid.NewString(), Aggregate: a, Version: version, CreateTime: t0,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "item_added", Body: []byte(`{"qty":` + strconv.Itoa(qty) + `}`)}}}
	data, err := eventstore.Encode(&st)
	require.NoError(e.t, err)
	subj, err := e.store.Subject(a)
	require.NoError(e.t, err)
	msg := nats.NewMsg(subj)
	msg.Data = data
	msg.Header.Set(jsstore.HeaderVersion, strconv.FormatUint(version, 10))
	msg.Header.Set(jsstore.HeaderFirstSeq, first)
	msg.Header.Set(jsstore.HeaderPrevSeqs, prevs)
	ack, err := e.js.PublishMsg(context.Background(), msg)
	require.NoError(e.t, err)
	return ack.Sequence
}

func (e *env) snapshotProcessor(tb testing.TB, opts ...processor.Option) (*processor.Processor, jetstream.KeyValue) {
	tb.Helper()
	p, kv := e.newSnapshotProcessor(tb, opts...)
	run(tb, p)
	return p, kv
}

// newSnapshotProcessor returns a processor with the order snapshot
// function, not started.
func (e *env) newSnapshotProcessor(tb testing.TB, opts ...processor.Option) (*processor.Processor, jetstream.KeyValue) {
	tb.Helper()
	kv, err := e.js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "snapshots"})
	require.NoError(tb, err)
	p := e.processor(opts...)
	require.NoError(tb, p.RegisterAggregate("order", cartEvolve))
	require.NoError(tb, p.Snapshot("order", kv))
	return p, kv
}

// Finding 1 of issue 11: version 2^64-1 on an orders message panicked the
// processor (makeslice: cap out of range) in the snapshot function's state
// load. Such a message is terminated as undecodable; the next ones are
// handled.
func TestForgedHugeVersionIsTerminatedNotLoaded(t *testing.T) {
	e := newEnv(t)
	p, kv := e.snapshotProcessor(t)
	e.emit(order("genuine"), 1, ev("item_added", map[string]int{"qty": 1}))
	e.forge(order("huge"), 1<<64-1, "1", "1", 1)
	e.forge(order("huge-2"), 1_000_000_000_000, "1", "1", 1)
	last := e.emit(order("genuine"), 2, ev("item_added", map[string]int{"qty": 2}))
	require.Eventually(t, func() bool { return e.settled(processor.SnapshotProcessor) }, waitFor, tick, "the consumer is not blocked")

	assert.Equal(t, uint64(2), p.Metrics().Undecodable.Load(), "both forged messages are undecodable")
	snap, err := processor.ReadSnapshot(context.Background(), kv, order("genuine"))
	require.NoError(t, err)
	assert.Equal(t, last.Seq, snap.Seq)
	_, err = processor.ReadSnapshot(context.Background(), kv, order("huge"))
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
}

// Finding 4 of issue 11: an order's forged stream listing another order's
// sequences made its snapshot hold the other order's data. The state load
// fails as corrupt, which is the snapshot function's recorded failure, and
// the snapshot keeps the order's own last state.
func TestForgedPointersIntoAnotherOrderDoNotReachItsSnapshot(t *testing.T) {
	e := newEnv(t)
	p, kv := e.snapshotProcessor(t, processor.WithStateCache(0)) // every stream loads its history
	var seqsY []string                                           // newest first
	for v := uint64(1); v <= 5; v++ {
		e.emit(order("X"), v, ev("item_added", map[string]int{"qty": 1}))
		y := e.emit(order("Y"), v, ev("item_added", map[string]int{"qty": 100}))
		seqsY = append([]string{strconv.FormatUint(y.Seq, 10)}, seqsY...)
	}
	// Each state load reads the history to the latest version, so let the
	// genuine streams be handled before the forged one exists.
	require.Eventually(t, func() bool { return e.settled(processor.SnapshotProcessor) }, waitFor, tick)
	e.forge(order("X"), 6, seqsY[len(seqsY)-1], strings.Join(seqsY, ","), 1)
	require.Eventually(t, func() bool { return e.settled(processor.SnapshotProcessor) }, waitFor, tick)

	snap, err := processor.ReadSnapshot(context.Background(), kv, order("X"))
	require.NoError(t, err)
	assert.Equal(t, uint64(5), snap.Version, "the forged v6 made no snapshot")
	assert.JSONEq(t, `{"id":"X","items":5}`, string(snap.State), "X's own state, none of Y's")
	assert.Equal(t, uint64(1), p.FunctionMetrics(processor.SnapshotProcessor, "order").Failed.Load(), "the state load failed once")
}

// A state is built from the history as of its stream: a forged stream
// appended later does not spoil the states of the genuine ones before it,
// even when they are handled after it was appended.
func TestStateLoadIgnoresWhatCameAfterTheStream(t *testing.T) {
	e := newEnv(t)
	p, kv := e.newSnapshotProcessor(t, processor.WithStateCache(0)) // every stream loads its history
	var seqsY []string                                              // newest first
	for v := uint64(1); v <= 5; v++ {
		e.emit(order("X"), v, ev("item_added", map[string]int{"qty": 1}))
		y := e.emit(order("Y"), v, ev("item_added", map[string]int{"qty": 100}))
		seqsY = append([]string{strconv.FormatUint(y.Seq, 10)}, seqsY...)
	}
	e.forge(order("X"), 6, seqsY[len(seqsY)-1], strings.Join(seqsY, ","), 1)
	run(t, p) // started after everything was published
	require.Eventually(t, func() bool { return e.settled(processor.SnapshotProcessor) }, waitFor, tick)

	snap, err := processor.ReadSnapshot(context.Background(), kv, order("X"))
	require.NoError(t, err)
	assert.Equal(t, uint64(5), snap.Version)
	assert.JSONEq(t, `{"id":"X","items":5}`, string(snap.State))
	assert.Equal(t, uint64(1), p.FunctionMetrics(processor.SnapshotProcessor, "order").Failed.Load(), "only the forged stream's state failed")
}
