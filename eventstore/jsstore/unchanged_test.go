package jsstore_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// gets records the direct gets a store sends: "last" for the last message
// on a subject, "next" for the next message on a subject after a sequence,
// "seq" for a message by sequence.
type gets struct {
	mu   sync.Mutex
	sent []string
}

func watchGets(t *testing.T, nc *nats.Conn) *gets {
	t.Helper()
	g := &gets{}
	sub, err := nc.Subscribe("$JS.API.DIRECT.GET.>", func(m *nats.Msg) {
		kind := "seq"
		switch {
		case strings.Count(m.Subject, ".") > 4:
			kind = "last" // $JS.API.DIRECT.GET.<stream>.<subject>
		case strings.Contains(string(m.Data), `"next_by_subj"`):
			kind = "next"
		}
		g.mu.Lock()
		g.sent = append(g.sent, kind)
		g.mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return g
}

// take returns what was sent since the last take, once n requests were
// seen (the subscription may see a request after its answer came back).
func (g *gets) take(t *testing.T, n int) []string {
	t.Helper()
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.sent) >= n }, 10*time.Second, time.Millisecond)
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.sent
	g.sent = nil
	return out
}

// An aggregate whose last position the store knows, and which has not
// moved, costs one direct get that finds nothing: the message after the
// known one. One that moved is read, and a message after the known one
// that is skipped is never taken for "unchanged".
func TestLoadLastIfChangedAsksOnlyForTheNextMessage(t *testing.T) {
	st, js, srv := newStore(t)
	nc, _ := srv.Connect()
	g := watchGets(t, nc)
	a := order("n")
	first := appendN(t, st, a, 0, 1)[0]

	_, changed, err := st.LoadLastIfChanged(t.Context(), a, first.Seq)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, []string{"next"}, g.take(t, 1), "one get of the next message, none of the last")

	other, err := jsstore.New(js) // another writer: st's position goes stale
	require.NoError(t, err)
	second, err := other.Append(t.Context(), newStream(a, "order_paid", nil), 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"last"}, g.take(t, 1), "the other writer read the aggregate to append")
	got, changed, err := st.LoadLastIfChanged(t.Context(), a, first.Seq)
	require.NoError(t, err)
	assert.True(t, changed, "the next message is there")
	assert.Equal(t, second, got)
	assert.Equal(t, []string{"next", "last"}, g.take(t, 2), "then the last message is read")

	_, changed, err = st.LoadLastIfChanged(t.Context(), a, second.Seq)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, []string{"next"}, g.take(t, 1), "the read taught st the new position")

	// A message after the known one that an operator skipped: the subject's
	// last message is not the known one, so the store reads as before.
	ack, err := js.Publish(t.Context(), mustSubject(t, st, a), []byte("junk"))
	require.NoError(t, err)
	_, err = st.Skip(t.Context(), ack.Stream, ack.Sequence, "alice", "junk", time.UnixMilli(1735000000000))
	require.NoError(t, err)
	_, changed, err = st.LoadLastIfChanged(t.Context(), a, second.Seq)
	require.NoError(t, err)
	assert.False(t, changed, "a skipped message is no change of the aggregate")
	third, err := st.Append(t.Context(), newStream(a, "order_shipped", nil), 2)
	require.NoError(t, err, "the append expects the skipped message as the subject's last")
	assert.Equal(t, uint64(3), third.Version)
}

// A store that worked with an aggregate learns its newer position from a
// consumer's delivery, so its next check and append need no read; a
// delivery of an aggregate it never worked with teaches it nothing.
func TestDecodeMsgAdvancesAKnownPosition(t *testing.T) {
	st, js, srv := newStore(t)
	nc, _ := srv.Connect()
	a, b := order("known"), order("unknown")
	appendN(t, st, a, 0, 1)
	other, err := jsstore.New(js)
	require.NoError(t, err)
	v2, err := other.Append(t.Context(), newStream(a, "order_paid", nil), 1)
	require.NoError(t, err)
	vb, err := other.Append(t.Context(), newStream(b, "order_placed", nil), 0)
	require.NoError(t, err)

	cons, err := js.CreateConsumer(t.Context(), st.StreamName("orders"), jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: v2.Seq,
	})
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(2)
	require.NoError(t, err)
	n := 0
	for m := range batch.Messages() {
		_, err := st.DecodeMsg(m)
		require.NoError(t, err)
		n++
	}
	require.NoError(t, batch.Error())
	require.Equal(t, 2, n)

	g := watchGets(t, nc)
	_, changed, err := st.LoadLastIfChanged(t.Context(), a, v2.Seq)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, []string{"next"}, g.take(t, 1), "the delivered position is known")
	_, err = st.Append(t.Context(), newStream(a, "order_shipped", nil), 2)
	require.NoError(t, err)
	_, changed, err = st.LoadLastIfChanged(t.Context(), b, vb.Seq)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, []string{"last"}, g.take(t, 1), "the append read nothing; the unknown aggregate's last message is read")
}

func mustSubject(t *testing.T, st *jsstore.Store, a eventstore.AggregateID) string {
	t.Helper()
	s, err := st.Subject(a)
	require.NoError(t, err)
	return s
}
