package projection

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/quarantine"
)

// ackCheckedMsg is a stored message that, when acked, checks that the
// views bucket already holds its record at its version or later: the ack
// contract of the projector.
type ackCheckedMsg struct {
	*natstest.Msg
	views   *Views
	key     string // the record's id
	version uint64
	mu      *sync.Mutex
	early   *[]string
}

func (m *ackCheckedMsg) Ack() error {
	e, err := m.views.Lookup(context.Background(), m.key)
	var v api.View
	if err == nil {
		v, err = decodeView(e.Value())
	}
	if err != nil || v.Version < m.version {
		m.mu.Lock()
		*m.early = append(*m.early, fmt.Sprintf("seq %d (%s version %d) acked with the view at %d (%v)", m.Seq, m.key, m.version, v.Version, err))
		m.mu.Unlock()
	}
	return m.Msg.Ack()
}

// pipelineEnv is a JetStream with records of several versions each, and a
// projector ready to take batches of their messages.
type pipelineEnv struct {
	js    jetstream.JetStream
	store *jsstore.Store
	views *Views
	p     *Projector
	msgs  []*natstest.Msg // every stored stream, in stream order
}

func newPipelineEnv(t *testing.T, records, versions int) *pipelineEnv {
	t.Helper()
	ctx := t.Context()
	js := natstest.New(t).JetStream()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	views, err := OpenViews(ctx, js)
	require.NoError(t, err)
	p, err := NewProjector(js, store, views, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	p.putPrefix = p.pipelinePrefix(ctx)
	require.NotEmpty(t, p.putPrefix, "writes are pipelined on a plain bucket")
	svc := aggregate.NewService(store)
	fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "P", Name: "on"}
	for v := range versions {
		for i := range records {
			evt := fmt.Sprintf("evt-%d", i)
			id := aggregate.RecordID(evt, fn)
			var c aggregate.Command = aggregate.ApplyRetrySpec{MaxRetries: int32(v), MinBackoff: 1, ExecutionTimeout: 1}
			if v == 0 {
				c = aggregate.CreateExecutionFailed{
					EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: evt}, Version: 1},
					Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "E", ErrorMsg: "boom"}, ExecuteAt: base,
				}
			}
			_, err := svc.Execute(ctx, id, c, aggregate.Meta{})
			require.NoError(t, err)
		}
	}
	stream, err := js.Stream(ctx, store.StreamName(aggregate.Context))
	require.NoError(t, err)
	e := &pipelineEnv{js: js, store: store, views: views, p: p}
	for seq := uint64(1); seq <= uint64(records*versions); seq++ {
		raw, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		e.msgs = append(e.msgs, &natstest.Msg{Subj: raw.Subject, Header: raw.Header, Body: raw.Data, Seq: raw.Sequence, Delivered: 1,
			Stream: store.StreamName(aggregate.Context), Consumer: DefaultDurable})
	}
	return e
}

// batch wraps msgs (copies, so that each is settled afresh) to check the
// ack contract; early collects the violations.
func (e *pipelineEnv) batch(t *testing.T, msgs []*natstest.Msg, early *[]string, mu *sync.Mutex) ([]jetstream.Msg, []*natstest.Msg) {
	t.Helper()
	out := make([]jetstream.Msg, len(msgs))
	fresh := make([]*natstest.Msg, len(msgs))
	for i, m := range msgs {
		st, err := e.store.DecodeMsg(m)
		require.NoError(t, err)
		key := st.Aggregate.ID
		fresh[i] = &natstest.Msg{Subj: m.Subj, Header: m.Header, Body: m.Body, Seq: m.Seq, Delivered: m.Delivered, Stream: m.Stream, Consumer: m.Consumer}
		out[i] = &ackCheckedMsg{Msg: fresh[i], views: e.views, key: key, version: st.Version, mu: mu, early: early}
	}
	return out, fresh
}

// assertFinal checks every record's view against the aggregate's state.
func (e *pipelineEnv) assertFinal(t *testing.T, versions uint64) {
	t.Helper()
	svc := aggregate.NewService(e.store)
	keys, err := e.views.ListKeys(t.Context())
	require.NoError(t, err)
	n := 0
	for key := range keys.Keys() {
		if !strings.Contains(key, ".") {
			continue // a processor's key
		}
		n++
		_, id, err := ParseKey(key)
		require.NoError(t, err)
		v, err := GetView(t.Context(), e.views, id)
		require.NoError(t, err)
		s, version, err := svc.Get(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, versions, version)
		assert.Equal(t, version, v.Version, "version of %s", id)
		assert.Equal(t, s, v.State, "state of %s", id)
	}
	assert.Equal(t, len(e.msgs)/int(versions), n, "one view per record")
}

// A batch holding several versions of several records, interleaved, is
// settled message by message only once each view is stored, and ends with
// every view at its record's last version, written once; the same messages delivered
// again, out of order and twice within one batch, leave every view as it
// is.
func TestPipelinedBatchAcksOnlyStoredEffects(t *testing.T) {
	const records, versions = 40, 4
	e := newPipelineEnv(t, records, versions)
	var mu sync.Mutex
	var early []string
	batch, fresh := e.batch(t, e.msgs, &early, &mu)
	e.p.handleBatch(t.Context(), batch)
	for _, m := range fresh {
		acks, naks, terms, _ := m.Settled()
		require.Equal(t, [3]int{1, 0, 0}, [3]int{acks, naks, terms}, "seq %d settled once, with an ack", m.Seq)
	}
	assert.Empty(t, early, "acked before the view was stored")
	st := e.p.Stats()
	assert.Equal(t, uint64(records*versions), st.Projected)
	assert.Zero(t, st.Rebuilt+st.Skipped+st.Failed+st.Corrupt)
	e.assertFinal(t, versions)
	kvStream, err := e.js.Stream(t.Context(), "KV_"+DefaultBucket)
	require.NoError(t, err)
	info, err := kvStream.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(records+1), info.State.LastSeq, "one write per record for its streams in one batch, and the processor's key once")

	// Redelivered: everything once more, shuffled within each record's
	// messages' order being lost, and some twice.
	again := append([]*natstest.Msg(nil), e.msgs...)
	r := rand.New(rand.NewPCG(5, 6))
	r.Shuffle(len(again), func(i, j int) { again[i], again[j] = again[j], again[i] })
	again = append(again, again[:records]...)
	revs := map[string]uint64{}
	keys, err := e.views.ListKeys(t.Context())
	require.NoError(t, err)
	for key := range keys.Keys() {
		en, err := e.views.Get(t.Context(), key)
		require.NoError(t, err)
		revs[key] = en.Revision()
	}
	batch, fresh = e.batch(t, again, &early, &mu)
	e.p.handleBatch(t.Context(), batch)
	for _, m := range fresh {
		acks, naks, terms, _ := m.Settled()
		require.Equal(t, [3]int{1, 0, 0}, [3]int{acks, naks, terms}, "seq %d settled once, with an ack", m.Seq)
	}
	assert.Empty(t, early)
	assert.Equal(t, uint64(len(again)), e.p.Stats().Skipped, "every redelivery skipped")
	for key, rev := range revs {
		en, err := e.views.Get(t.Context(), key)
		require.NoError(t, err)
		assert.Equal(t, rev, en.Revision(), "%s not written again", key)
	}
	e.assertFinal(t, versions)
}

// A view another writer changed since the projector wrote it makes the
// pipelined compare-and-set fail: the projector rereads and never writes
// an older view over a newer one.
func TestPipelinedWriteNeverOverwritesANewerView(t *testing.T) {
	const records, versions = 5, 2
	e := newPipelineEnv(t, records, versions)
	var mu sync.Mutex
	var early []string
	first, _ := e.batch(t, e.msgs[:records], &early, &mu)
	e.p.handleBatch(t.Context(), first)
	// Someone else moves record 0's view ahead: a later command, projected
	// by another projector.
	st, err := e.store.DecodeMsg(e.msgs[0])
	require.NoError(t, err)
	last, err := e.views.Lookup(t.Context(), st.Aggregate.ID)
	require.NoError(t, err)
	key := last.Key()
	_, err = aggregate.NewService(e.store).Execute(t.Context(), st.Aggregate.ID, aggregate.ApplyRetrySpec{MaxRetries: 9, MinBackoff: 1, ExecutionTimeout: 1}, aggregate.Meta{})
	require.NoError(t, err)
	history, err := e.store.Load(t.Context(), st.Aggregate, 1)
	require.NoError(t, err)
	ahead, err := replayView(st.Aggregate.ID, history)
	require.NoError(t, err)
	require.Equal(t, uint64(versions+1), ahead.Version)
	data, err := encodeView(&ahead)
	require.NoError(t, err)
	_, err = e.views.Put(t.Context(), key, data)
	require.NoError(t, err)

	second, fresh := e.batch(t, e.msgs[records:], &early, &mu)
	e.p.handleBatch(t.Context(), second)
	for _, m := range fresh {
		acks, _, _, _ := m.Settled()
		require.Equal(t, 1, acks, "seq %d acked", m.Seq)
	}
	assert.Empty(t, early)
	got, err := GetView(t.Context(), e.views, st.Aggregate.ID)
	require.NoError(t, err)
	assert.Equal(t, uint64(versions+1), got.Version, "the newer view stays")
	stats := e.p.Stats()
	assert.Equal(t, uint64(1), stats.Skipped, "the stale stream skipped after a reread")
	assert.Equal(t, uint64(records+records-1), stats.Projected)
}

// A bucket that refuses the writes (here: larger than it accepts) gets no
// message acked: each is handed back for redelivery, and projected once
// the bucket takes writes again.
func TestPipelinedBatchAcksNothingTheBucketRefused(t *testing.T) {
	const records, versions = 10, 3
	e := newPipelineEnv(t, records, versions)
	ctx := t.Context()
	stream, err := e.js.Stream(ctx, "KV_"+DefaultBucket)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	cfg.MaxMsgSize = 16
	_, err = e.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	var mu sync.Mutex
	var early []string
	batch, fresh := e.batch(t, e.msgs, &early, &mu)
	e.p.handleBatch(ctx, batch)
	for _, m := range fresh {
		acks, naks, terms, _ := m.Settled()
		require.Equal(t, [3]int{0, 1, 0}, [3]int{acks, naks, terms}, "seq %d handed back", m.Seq)
	}
	assert.Empty(t, early)
	assert.Equal(t, uint64(len(e.msgs)), e.p.Stats().Failed)

	cfg.MaxMsgSize = -1
	_, err = e.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	for _, m := range e.msgs {
		m.Delivered = 2
	}
	batch, fresh = e.batch(t, e.msgs, &early, &mu)
	e.p.handleBatch(ctx, batch)
	for _, m := range fresh {
		acks, _, _, _ := m.Settled()
		require.Equal(t, 1, acks, "seq %d acked", m.Seq)
	}
	assert.Empty(t, early)
	e.assertFinal(t, versions)
}

// A stream that can never be projected, between good streams of its
// record and of others in one batch, is quarantined and terminated as on
// its own; the streams before it are written and acked, and the records
// around it are not held back.
func TestPipelinedBatchQuarantinesAPoisonStreamAmongGoodOnes(t *testing.T) {
	const records, versions = 3, 2
	e := newPipelineEnv(t, records, versions)
	// The second stream of record 0, with an event no decoder knows and
	// no carried state.
	orig := e.msgs[records]
	bad := &natstest.Msg{Subj: orig.Subj, Header: orig.Header, Seq: orig.Seq, Delivered: 1, Stream: orig.Stream, Consumer: orig.Consumer}
	st, err := eventstore.Decode(orig.Body)
	require.NoError(t, err)
	st.Events[0].Name, st.State = "no_such_event", nil
	bad.Body, err = eventstore.Encode(&st)
	require.NoError(t, err)
	msgs := append([]*natstest.Msg{}, e.msgs[:records]...) // every record's first stream
	msgs = append(msgs, bad)
	msgs = append(msgs, e.msgs[records+1:]...) // the others' second streams

	var mu sync.Mutex
	var early []string
	batch, fresh := e.batch(t, msgs, &early, &mu)
	e.p.handleBatch(t.Context(), batch)
	for i, m := range fresh {
		acks, naks, terms, _ := m.Settled()
		want := [3]int{1, 0, 0}
		if i == records {
			want = [3]int{0, 0, 1}
		}
		require.Equal(t, want, [3]int{acks, naks, terms}, "seq %d", m.Seq)
	}
	assert.Empty(t, early)
	entries, err := e.p.Quarantine().All(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, quarantine.ReasonUndecodable, entries[0].Reason)
	assert.Equal(t, bad.Seq, entries[0].Seq)
	for i, m := range e.msgs[:records] {
		first, err := e.store.DecodeMsg(m)
		require.NoError(t, err)
		v, err := GetView(t.Context(), e.views, first.Aggregate.ID)
		require.NoError(t, err)
		want := uint64(versions)
		if i == 0 {
			want = 1 // its second stream is the poison one
		}
		assert.Equal(t, want, v.Version, "record %d", i)
	}
	stats := e.p.Stats()
	assert.Equal(t, uint64(1), stats.Corrupt)
	assert.Equal(t, uint64(len(msgs)-1), stats.Projected)
}
