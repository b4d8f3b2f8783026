package jsstore_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

func TestAppendThenLoadKeepsOrderAndFields(t *testing.T) {
	st, _, _ := newStore(t)
	a := order("o-1")
	first := newStream(a, "order_created", map[string]string{"sku": "A"})
	first.RequestID, first.TraceID = "req-1", "trace-1"
	first.Headers = map[string]string{"actor": "alice"}
	first.State = []byte(`{"status":"NEW"}`)
	c1, err := st.Append(t.Context(), first, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c1.Version, "the first stream is version 1")
	assert.NotZero(t, c1.Seq, "a committed stream has its store sequence")
	appendN(t, st, a, 1, 4)

	got, err := st.Load(t.Context(), a, 0)
	require.NoError(t, err)
	require.Equal(t, seq(1, 5), versions(got), "Load returns every version in order")
	first.Version, first.Seq = 1, c1.Seq
	assert.Equal(t, first, got[0], "the loaded stream equals the appended one")
	for i := 1; i < len(got); i++ {
		assert.Greater(t, got[i].Seq, got[i-1].Seq, "sequences grow with versions")
	}

	tail, err := st.Load(t.Context(), a, 4)
	require.NoError(t, err)
	assert.Equal(t, seq(4, 5), versions(tail), "Load from 4 returns versions 4 and 5")

	none, err := st.Load(t.Context(), a, 6)
	require.NoError(t, err)
	assert.Empty(t, none, "Load past the last version returns nothing")

	last, err := st.LoadLast(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), last.Version)

	v2, err := st.LoadVersion(t.Context(), a, 2)
	require.NoError(t, err)
	assert.Equal(t, got[1], v2)

	bySeq, err := st.GetSeq(t.Context(), "orders", got[2].Seq)
	require.NoError(t, err)
	assert.Equal(t, got[2], bySeq, "GetSeq returns the stream at that sequence")
}

func TestReadingAMissingAggregateIsNotFound(t *testing.T) {
	st, _, _ := newStore(t)
	_, err := st.Load(t.Context(), order("nope"), 1)
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
	_, err = st.LoadLast(t.Context(), order("nope"))
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
	appendN(t, st, order("o"), 0, 2)
	_, err = st.LoadVersion(t.Context(), order("o"), 3)
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
	assert.ErrorContains(t, err, "is at version 2 and has no version 3")
	_, err = st.GetSeq(t.Context(), "orders", 999)
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
}

func TestAppendAtAStaleVersionConflicts(t *testing.T) {
	for _, cache := range []int{0, 1024} {
		t.Run(map[int]string{0: "without position cache", 1024: "with position cache"}[cache], func(t *testing.T) {
			st, _, _ := newStore(t, jsstore.WithPositionCache(cache))
			a := order("o-2")
			appendN(t, st, a, 0, 3)

			_, err := st.Append(t.Context(), newStream(a, "late", map[string]int{}), 1)
			require.ErrorIs(t, err, eventstore.ErrConflict)
			var ce *eventstore.ConflictError
			require.True(t, errors.As(err, &ce), "the conflict is a *ConflictError")
			assert.Equal(t, uint64(1), ce.Expected)
			assert.Equal(t, uint64(3), ce.Actual)
			assert.Contains(t, err.Error(), "orders.order/o-2 expected version 1 but it is at version 3")

			_, err = st.Append(t.Context(), newStream(a, "new", map[string]int{}), 0)
			assert.ErrorIs(t, err, eventstore.ErrConflict, "expecting a new aggregate when it exists conflicts")

			_, err = st.Append(t.Context(), newStream(order("ghost"), "x", map[string]int{}), 2)
			assert.ErrorIs(t, err, eventstore.ErrConflict, "expecting version 2 of a missing aggregate conflicts")
			assert.ErrorContains(t, err, "does not exist")

			got, err := st.Load(t.Context(), a, 1)
			require.NoError(t, err)
			assert.Equal(t, seq(1, 3), versions(got), "rejected appends wrote nothing")
		})
	}
}

// N writers race for every version of one aggregate: each version has
// exactly one winner, and the history has no gap and no duplicate.
func TestConcurrentAppendsToOneAggregate(t *testing.T) {
	for _, cache := range []int{0, 1024} {
		t.Run(map[int]string{0: "without position cache", 1024: "with position cache"}[cache], func(t *testing.T) {
			st, _, _ := newStore(t, jsstore.WithPositionCache(cache))
			a := order("hot")
			const writers, target = 8, 40
			var (
				wins      sync.Map // version -> stream id
				conflicts atomic.Int64
				wg        sync.WaitGroup
			)
			for range writers {
				wg.Go(func() {
					for {
						var v uint64
						last, err := st.LoadLast(t.Context(), a)
						switch {
						case errors.Is(err, eventstore.ErrNotFound):
						case err != nil:
							t.Error(err)
							return
						default:
							v = last.Version
						}
						if v >= target {
							return
						}
						s := newStream(a, "step", map[string]uint64{"v": v + 1})
						c, err := st.Append(t.Context(), s, v)
						if errors.Is(err, eventstore.ErrConflict) {
							conflicts.Add(1)
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						if prev, dup := wins.LoadOrStore(c.Version, s.ID); dup {
							t.Errorf("version %d won twice: %v and %v", c.Version, prev, s.ID)
						}
					}
				})
			}
			wg.Wait()
			got, err := st.Load(t.Context(), a, 1)
			require.NoError(t, err)
			require.Equal(t, seq(1, target), versions(got), "every version exactly once, in order")
			for _, s := range got {
				id, ok := wins.Load(s.Version)
				require.True(t, ok, "version %d has a winner", s.Version)
				assert.Equal(t, id, s.ID, "the stored stream at version %d is the one its writer saw win", s.Version)
			}
			t.Logf("%d conflicts among %d writers", conflicts.Load(), writers)
		})
	}
}

func TestRetriedAppendReturnsTheCommittedStream(t *testing.T) {
	st, js, _ := newStore(t)
	a := order("retry")
	s := newStream(a, "order_created", map[string]string{})
	first, err := st.Append(t.Context(), s, 0)
	require.NoError(t, err)

	// The same append again, as after a lost acknowledgement: JetStream
	// rejects it with 10071 (wrong last sequence), and the store recognises
	// its own stream.
	again, err := st.Append(t.Context(), s, 0)
	require.NoError(t, err, "a retried append is not a conflict")
	assert.Equal(t, first, again, "the retry returns the committed stream")

	// Still recognised after the aggregate moved on.
	appendN(t, st, a, 1, 20)
	late, err := st.Append(t.Context(), s, 0)
	require.NoError(t, err)
	assert.Equal(t, first.Seq, late.Seq)

	// And at a later version, where the store reads the position first.
	mid := newStream(a, "step", map[string]string{})
	committed, err := st.Append(t.Context(), mid, 21)
	require.NoError(t, err)
	appendN(t, st, a, 22, 3)
	retried, err := st.Append(t.Context(), mid, 21)
	require.NoError(t, err, "a retry at version 22 after the aggregate reached 25")
	assert.Equal(t, committed, retried)

	// A different stream at a taken version is a real conflict.
	_, err = st.Append(t.Context(), newStream(a, "order_created", map[string]string{}), 0)
	assert.ErrorIs(t, err, eventstore.ErrConflict)

	info, err := js.Stream(t.Context(), st.StreamName("orders"))
	require.NoError(t, err)
	assert.Equal(t, uint64(25), info.CachedInfo().State.Msgs, "the retries stored nothing")
}

func TestAppendRejectsInvalidStreams(t *testing.T) {
	st, js, _ := newStore(t, jsstore.WithMaxMsgSize(4096))
	a := order("bad")
	big := newStream(a, "big", map[string]string{"blob": string(make([]byte, 5000))})
	cases := []struct {
		name     string
		mutate   func(*eventstore.Stream)
		expected uint64
		want     string
	}{
		{"oversized", func(s *eventstore.Stream) { *s = big }, 0, "max message size is 4096"},
		{"no events", func(s *eventstore.Stream) { s.Events = nil }, 0, "has no events"},
		{"empty body", func(s *eventstore.Stream) { s.Events[0].Body = nil }, 0, "empty body"},
		{"bad json body", func(s *eventstore.Stream) { s.Events[0].Body = []byte("{") }, 0, "not valid JSON"},
		{"bad event name", func(s *eventstore.Stream) { s.Events[0].Name = "order created" }, 0, `event name "order created" has ' '`},
		{"bad context", func(s *eventstore.Stream) { s.Aggregate.Context = "or.ders" }, 0, "aggregate context"},
		{"empty type", func(s *eventstore.Stream) { s.Aggregate.Type = "" }, 0, "aggregate type is empty"},
		{"empty id", func(s *eventstore.Stream) { s.Aggregate.ID = "" }, 0, "aggregate id is empty"},
		{"control char id", func(s *eventstore.Stream) { s.Aggregate.ID = "a\nb" }, 0, "control character"},
		{"empty stream id", func(s *eventstore.Stream) { s.ID = "" }, 0, "stream id is empty"},
		{"wrong version", func(s *eventstore.Stream) { s.Version = 7 }, 0, "must be 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStream(a, "ok", map[string]string{})
			c.mutate(&s)
			_, err := st.Append(t.Context(), s, c.expected)
			require.ErrorIs(t, err, eventstore.ErrInvalid)
			assert.ErrorContains(t, err, c.want)
		})
	}
	_, err := js.Stream(t.Context(), st.StreamName("orders"))
	if err == nil {
		info, _ := js.Stream(t.Context(), st.StreamName("orders"))
		assert.Zero(t, info.CachedInfo().State.Msgs, "no invalid stream was stored")
	}
}

func TestReusedStreamIDIsRejected(t *testing.T) {
	st, _, _ := newStore(t)
	s := newStream(order("first"), "e", map[string]int{})
	_, err := st.Append(t.Context(), s, 0)
	require.NoError(t, err)
	s.Aggregate = order("second")
	_, err = st.Append(t.Context(), s, 0)
	require.ErrorIs(t, err, eventstore.ErrInvalid)
	assert.ErrorContains(t, err, "was already used by orders.order/first version 1")
	_, err = st.LoadLast(t.Context(), order("second"))
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "nothing was stored for the second aggregate")
}

func TestDecodeMsgFromAConsumer(t *testing.T) {
	st, js, _ := newStore(t)
	committed := appendN(t, st, order("c-1"), 0, 2)
	cons, err := js.CreateOrUpdateConsumer(t.Context(), st.StreamName("orders"), jetstream.ConsumerConfig{
		FilterSubject: st.FilterSubject("orders", "order"),
	})
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(2)
	require.NoError(t, err)
	var got []eventstore.Stream
	for m := range batch.Messages() {
		s, err := st.DecodeMsg(m)
		require.NoError(t, err)
		got = append(got, s)
	}
	assert.Equal(t, committed, got, "consumed streams decode like loaded ones, with their sequences")
}

func TestLoadLastIfChanged(t *testing.T) {
	st, _, _ := newStore(t)
	a := order("c")
	first := appendN(t, st, a, 0, 1)[0]
	_, changed, err := st.LoadLastIfChanged(t.Context(), a, first.Seq)
	require.NoError(t, err)
	assert.False(t, changed, "the last stream is still the known one")
	second := appendN(t, st, a, 1, 1)[0]
	got, changed, err := st.LoadLastIfChanged(t.Context(), a, first.Seq)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, second, got)
	_, _, err = st.LoadLastIfChanged(t.Context(), order("none"), 0)
	assert.ErrorIs(t, err, eventstore.ErrNotFound)
}

func TestPrevSeqOnEveryRead(t *testing.T) {
	st, js, _ := newStore(t)
	other := appendN(t, st, order("other"), 0, 1)[0] // a message in between
	committed := appendN(t, st, order("p"), 0, 3)
	require.Less(t, other.Seq, committed[0].Seq)
	assert.Zero(t, committed[0].PrevSeq, "version 1 has no previous stream")
	for i := 1; i < len(committed); i++ {
		assert.Equal(t, committed[i-1].Seq, committed[i].PrevSeq, "Append sets version %d's PrevSeq", i+1)
	}
	loaded, err := st.Load(t.Context(), order("p"), 1)
	require.NoError(t, err)
	assert.Equal(t, committed, loaded, "Load sets PrevSeq as Append does")
	v2, err := st.LoadVersion(t.Context(), order("p"), 2)
	require.NoError(t, err)
	assert.Equal(t, committed[0].Seq, v2.PrevSeq)
	bySeq, err := st.GetSeq(t.Context(), "orders", committed[2].Seq)
	require.NoError(t, err)
	assert.Equal(t, committed[1].Seq, bySeq.PrevSeq)
	cons, err := js.CreateOrUpdateConsumer(t.Context(), st.StreamName("orders"), jetstream.ConsumerConfig{
		FilterSubject: st.FilterSubject("orders", "order"), DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: committed[1].Seq,
	})
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(2)
	require.NoError(t, err)
	var got []uint64
	for m := range batch.Messages() {
		s, err := st.DecodeMsg(m)
		require.NoError(t, err)
		got = append(got, s.PrevSeq)
	}
	assert.Equal(t, []uint64{committed[0].Seq, committed[1].Seq}, got, "DecodeMsg sets PrevSeq from the message")
}
