package projection_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
)

// poisonCount is more than the projector's MaxAckPending in these tests:
// a consumer that keeps poison messages pending stalls behind them.
const (
	poisonCount   = 300
	poisonPending = 64
)

// recordAggregate is the event-store aggregate of record id.
func recordAggregate(id string) eventstore.AggregateID {
	return eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: id}
}

// publishBrokenHistory publishes a stream of record id at version 2 that
// decodes, carries no state and whose history cannot load: its headers
// point at sequence 1 for version 1, a message of another record.
func (e *env) publishBrokenHistory(tb testing.TB, id string) {
	tb.Helper()
	st := eventstore.Stream{ID: "forged-" + id, Aggregate: recordAggregate(id), Version: 2, CreateTime: t0.UnixMilli(),
		Events: []eventstore.Event{{ID: "ev-" + id, Name: aggregate.NameRecoverableMarked, Body: []byte(`{"recoverable":"RECOVERABLE"}`)}}}
	data, err := eventstore.Encode(&st)
	require.NoError(tb, err)
	subj, err := e.store.Subject(st.Aggregate)
	require.NoError(tb, err)
	m := nats.NewMsg(subj)
	m.Data = data
	m.Header.Set(jsstore.HeaderVersion, "2")
	m.Header.Set(jsstore.HeaderFirstSeq, "1")
	m.Header.Set(jsstore.HeaderPrevSeqs, "1")
	_, err = e.js.PublishMsg(tb.Context(), m)
	require.NoError(tb, err)
}

// appendPreparedOnly appends a first stream of record id that prepares a
// compensation of a record that was never created: Evolve makes a state
// without a function kind, which the view decoder refuses.
func (e *env) appendPreparedOnly(tb testing.TB, id string) {
	tb.Helper()
	_, body, err := aggregate.EncodeEvent(aggregate.CompensationPrepared{Function: fnA, RetryState: aggregate.RetryState{Retries: 1}})
	require.NoError(tb, err)
	_, err = e.store.Append(tb.Context(), eventstore.Stream{ID: "forged-" + id, Aggregate: recordAggregate(id), CreateTime: t0.UnixMilli(),
		Events: []eventstore.Event{{ID: "ev-" + id, Name: aggregate.NameCompensationPrepared, Body: body}}}, 0)
	require.NoError(tb, err)
}

// quarantined waits until q lists n entries and returns them.
func quarantined(tb testing.TB, q *quarantine.Quarantine, n int) []quarantine.Entry {
	tb.Helper()
	var all []quarantine.Entry
	require.Eventually(tb, func() bool {
		var err error
		all, err = q.All(tb.Context(), quarantine.Query{})
		return err == nil && len(all) >= n
	}, 30*time.Second, 10*time.Millisecond, "%d messages quarantined", n)
	return all
}

func TestProjectorQuarantinesHistoriesThatDoNotLoad(t *testing.T) {
	e := newEnv(t)
	before := e.create(t, evt(0), fnA, "E", nil) // the poison's first-sequence header points at it
	for i := range poisonCount {
		e.publishBrokenHistory(t, fmt.Sprintf("broken-%03d", i))
	}
	p := e.projector(t, projection.WithMaxAckPending(poisonPending))
	run(t, p)
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{before: 1, id: 1}) // behind hundreds of poison messages

	entries := quarantined(t, p.Quarantine(), poisonCount)
	require.Len(t, entries, poisonCount)
	stream := e.store.StreamName(aggregate.Context)
	for i, q := range entries {
		assert.Equal(t, stream, q.Stream)
		assert.Equal(t, projection.DefaultDurable, q.Consumer)
		assert.Equal(t, quarantine.ReasonCorrupt, q.Reason, "entry %d: %s", i, q.Error)
		assert.NotZero(t, q.Seq)
		assert.Contains(t, q.Subject, "broken-")
		assert.NotZero(t, q.At)
	}
	e.drained(t)
	assert.Equal(t, uint64(poisonCount), p.Stats().Corrupt)
	assert.Equal(t, []quarantine.Count{{Consumer: projection.DefaultDurable, Reason: quarantine.ReasonCorrupt, N: poisonCount}}, p.Quarantine().Counts())
}

func TestProjectorNeverWritesAViewItCannotRead(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.store.Provision(t.Context(), aggregate.Context))
	for i := range poisonCount {
		e.appendPreparedOnly(t, fmt.Sprintf("forged-%03d", i))
	}
	p := e.projector(t, projection.WithMaxAckPending(poisonPending))
	run(t, p)
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})

	entries := quarantined(t, p.Quarantine(), poisonCount)
	require.Len(t, entries, poisonCount)
	for _, q := range entries {
		assert.Equal(t, quarantine.ReasonInvalidView, q.Reason, q.Error)
		assert.Contains(t, q.Error, "functionKind", "the error names the field the reader refuses")
	}
	e.drained(t)
	keys, err := e.views.ListKeys(t.Context())
	require.NoError(t, err)
	var n int
	for k := range keys.Keys() {
		if !strings.Contains(k, ".") {
			continue // a processor's key
		}
		_, id, err := projection.ParseKey(k)
		require.NoError(t, err)
		_, err = projection.GetView(t.Context(), e.views, id)
		require.NoError(t, err, "every view in the bucket reads back (%s)", k)
		n++
	}
	assert.Equal(t, 1, n, "only the genuine record has a view")
}

func TestProjectorQuarantinesUndecodableMessages(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.store.Provision(t.Context(), aggregate.Context))
	for i := range poisonCount {
		_, err := e.js.Publish(t.Context(), "amends.compensation.execution_failed.bogus-"+strconv.Itoa(i), []byte("not json"))
		require.NoError(t, err)
	}
	p := e.projector(t, projection.WithMaxAckPending(poisonPending))
	run(t, p)
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})
	for _, q := range quarantined(t, p.Quarantine(), poisonCount) {
		assert.Equal(t, quarantine.ReasonUndecodable, q.Reason, q.Error)
	}
}

// timingOutViews is the real views bucket whose updates of one key time
// out, as a bucket without a leader does, until mended.
type timingOutViews struct {
	jetstream.KeyValue
	key    string
	failed atomic.Int32
}

func (v *timingOutViews) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if key == v.key {
		v.failed.Add(1)
		return 0, nats.ErrTimeout
	}
	return v.KeyValue.Update(ctx, key, value, rev)
}

func TestProjectorQuarantinesATransientErrorAfterBoundedRetries(t *testing.T) {
	e := newEnv(t)
	stuck := aggregate.RecordID(evt(0), fnA)
	key, err := projection.ViewKey(fnA.ProcessorName, stuck)
	require.NoError(t, err)
	timingOut := &timingOutViews{KeyValue: e.views.KeyValue, key: key}
	views := wrapViews(t, e, timingOut)
	retry := quarantine.Retry{First: time.Millisecond, Max: 4 * time.Millisecond, Deliveries: 4}
	p, err := projection.NewProjector(e.js, e.store, views, projection.WithRetry(retry))
	require.NoError(t, err)
	run(t, p)
	e.create(t, evt(0), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{stuck: 1})
	e.exec(t, stuck, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable}) // its update times out
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})

	entries := quarantined(t, p.Quarantine(), 1)
	require.Len(t, entries, 1)
	q := entries[0]
	assert.Equal(t, quarantine.ReasonRetriesExhausted, q.Reason)
	assert.Equal(t, uint64(4), q.Deliveries, "quarantined on the last delivery the policy allows")
	assert.Contains(t, q.Error, "timeout")
	assert.Equal(t, int32(4), timingOut.failed.Load(), "each delivery tried once more, then no more")
	e.drained(t)
	assert.Equal(t, uint64(3), p.Stats().Failed, "three redeliveries")
}
