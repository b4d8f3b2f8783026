package processor_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

type cart struct {
	ID    string `json:"id"`
	Items int    `json:"items"`
}

var cartEvolve = processor.Evolve(
	func(id eventstore.AggregateID) cart { return cart{ID: id.ID} },
	func(c cart, e *eventstore.Event) (cart, error) {
		var body struct{ Qty int }
		if err := json.Unmarshal(e.Body, &body); err != nil {
			return c, err
		}
		c.Items += body.Qty
		return c, nil
	})

// STATE_EVENT functions get the state after the event's stream, are not
// retried at once and are recorded on their first failure; their replay
// gets the state as of the recorded version.
func TestStateEventFunctions(t *testing.T) {
	e := newEnv(t)
	p := e.processor(processor.WithStateCache(2))
	require.NoError(t, p.RegisterAggregate("order", cartEvolve))
	var (
		mu     sync.Mutex
		seen   = map[uint64]cart{}
		failAt = uint64(2)
	)
	calls := 0
	stateFn := processor.Function{Processor: "Cache", Name: "onState", Kind: aggregate.KindStateEvent, AggregateTypes: []string{"order"}}
	require.NoError(t, p.Register(stateFn, processor.HandleState(func(_ context.Context, d *processor.Delivery, c cart) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		seen[d.Stream.Version] = c
		if d.Stream.Version == failAt {
			return failure.Recoverable(errBoom)
		}
		return nil
	})))
	run(t, p)

	var evts []string
	for v := uint64(1); v <= 3; v++ {
		evts = append(evts, e.emit(order("c-1"), v, ev("item_added", map[string]int{"qty": int(v)})).Events[0].ID)
	}
	require.Eventually(t, func() bool { return e.settled("Cache") }, waitFor, tick)
	mu.Lock()
	assert.Equal(t, map[uint64]cart{1: {"c-1", 1}, 2: {"c-1", 3}, 3: {"c-1", 6}}, seen, "the state after each stream")
	assert.Equal(t, 3, calls, "a STATE_EVENT failure is not retried at once, even when recoverable")
	failAt = 0
	seen = map[uint64]cart{}
	mu.Unlock()

	fi := aggregate.FunctionInfo{FunctionKind: aggregate.KindStateEvent, ContextName: ctxName, ProcessorName: "Cache", Name: "onState"}
	rec := e.record(evts[1], fi)
	require.Equal(t, aggregate.StatusFailed, rec.Status, "recorded on the first failure")
	assert.Equal(t, aggregate.KindStateEvent, rec.Function.FunctionKind)

	e.prepare(aggregate.RecordID(evts[1], fi), false)
	require.Eventually(t, func() bool { return e.record(evts[1], fi).Status == aggregate.StatusSucceeded }, waitFor, tick)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[uint64]cart{2: {"c-1", 3}}, seen, "the replay got the state as of version 2, rebuilt from history")
}

// The built-in snapshot function keeps each aggregate's latest state in a
// KV bucket.
func TestSnapshotFunction(t *testing.T) {
	e := newEnv(t)
	kv, err := e.js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "snapshots"})
	require.NoError(t, err)
	p := e.processor()
	require.NoError(t, p.RegisterAggregate("order", cartEvolve))
	require.NoError(t, p.Snapshot("order", kv))
	run(t, p)

	a := order("with.dots and spaces")
	e.emit(a, 1, ev("item_added", map[string]int{"qty": 2}))
	last := e.emit(a, 2, ev("item_added", map[string]int{"qty": 1}), ev("item_added", map[string]int{"qty": 4}))
	require.Eventually(t, func() bool { return e.settled(processor.SnapshotProcessor) }, waitFor, tick)

	snap, err := processor.ReadSnapshot(context.Background(), kv, a)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), snap.Version)
	assert.Equal(t, last.Seq, snap.Seq)
	assert.JSONEq(t, `{"id":"with.dots and spaces","items":7}`, string(snap.State))
	m := p.FunctionMetrics(processor.SnapshotProcessor, "order")
	assert.Equal(t, uint64(3), m.Succeeded.Load(), "called per event; saved once per stream")

	_, err = processor.ReadSnapshot(context.Background(), kv, order("none"))
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
}
