package jsstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// Finding 6: one garbage message published on an aggregate's subject
// bricked it: every load failed (no valid Amends-Version header) and the
// stream denies deletes and purges. An operator's skip makes loaders pass
// it over; appends continue after it; nothing is deleted.
func TestASkippedMessageNoLongerBricksItsAggregate(t *testing.T) {
	st, js, _ := newStore(t)
	ctx := t.Context()
	a := order("o-1")
	appendN(t, st, a, 0, 2)
	subj, err := st.Subject(a)
	require.NoError(t, err)
	ack, err := js.Publish(ctx, subj, []byte("garbage"))
	require.NoError(t, err)
	_, err = st.Load(ctx, a, 1)
	require.ErrorIs(t, err, eventstore.ErrCorrupt, "bricked")

	plan, err := st.PlanSkip(ctx, ack.Stream, ack.Sequence)
	require.NoError(t, err)
	assert.Equal(t, subj, plan.Subject)
	assert.Equal(t, uint64(2), plan.Version, "the aggregate reads at version 2 once skipped")
	assert.NotZero(t, plan.Prev)
	assert.Contains(t, plan.Problem, "corrupt message")
	assert.False(t, plan.Skipped)
	_, err = st.Load(ctx, a, 1)
	require.ErrorIs(t, err, eventstore.ErrCorrupt, "a plan changes nothing")

	_, err = st.Skip(ctx, ack.Stream, ack.Sequence, "", "x", time.Now())
	require.ErrorIs(t, err, eventstore.ErrInvalid, "audited: an actor is required")
	done, err := st.Skip(ctx, ack.Stream, ack.Sequence, "alice", "garbage from a bad producer", time.Now())
	require.NoError(t, err)
	assert.True(t, done.Skipped)

	ss, err := st.Load(ctx, a, 1)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, versions(ss))
	last, err := st.LoadLast(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), last.Version)
	appendN(t, st, a, 2, 18) // to version 20: a load of them all walks the stream, past the skipped message
	ss, err = st.Load(ctx, a, 1)
	require.NoError(t, err)
	require.Len(t, ss, 20)
	assert.Equal(t, uint64(20), ss[19].Version)

	// A second store (another process) honours the skip too.
	other, err := jsstore.New(js)
	require.NoError(t, err)
	ss, err = other.Load(ctx, a, 1)
	require.NoError(t, err)
	assert.Len(t, ss, 20)

	_, err = st.PlanSkip(ctx, ack.Stream, ss[3].Seq)
	require.ErrorIs(t, err, jsstore.ErrNotCorrupt, "a stream amends wrote is never skipped")
}

func TestASkippedFirstMessageLeavesAnAggregateToCreate(t *testing.T) {
	st, js, _ := newStore(t)
	ctx := t.Context()
	a := order("o-2")
	require.NoError(t, st.Provision(ctx, "orders"))
	subj, err := st.Subject(a)
	require.NoError(t, err)
	ack, err := js.Publish(ctx, subj, []byte("{}"))
	require.NoError(t, err)
	_, err = st.Append(ctx, newStream(a, "created", struct{}{}), 0)
	require.Error(t, err, "bricked before the skip")
	plan, err := st.Skip(ctx, ack.Stream, ack.Sequence, "alice", "junk", time.Now())
	require.NoError(t, err)
	assert.Zero(t, plan.Prev)
	_, err = st.Load(ctx, a, 1)
	require.ErrorIs(t, err, eventstore.ErrNotFound, "no stream before it")
	fresh, err := jsstore.New(js)
	require.NoError(t, err)
	appendN(t, fresh, a, 0, 3)
	ss, err := st.Load(ctx, a, 1)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3}, versions(ss))
}

// A message with readable position headers but a body that is not a
// stream (a forged one) is skipped as well.
func TestASkippedMessageWithValidHeadersIsPassedOver(t *testing.T) {
	st, js, _ := newStore(t)
	ctx := t.Context()
	a := order("o-3")
	ss := appendN(t, st, a, 0, 1)
	subj, err := st.Subject(a)
	require.NoError(t, err)
	m := nats.NewMsg(subj)
	m.Data = []byte("not json")
	m.Header.Set(jsstore.HeaderVersion, "2")
	m.Header.Set(jsstore.HeaderFirstSeq, itoa(ss[0].Seq))
	m.Header.Set(jsstore.HeaderPrevSeqs, itoa(ss[0].Seq))
	ack, err := js.PublishMsg(ctx, m)
	require.NoError(t, err)
	_, err = st.LoadLast(ctx, a)
	require.ErrorIs(t, err, eventstore.ErrCorrupt)
	_, err = st.Skip(ctx, ack.Stream, ack.Sequence, "alice", "forged", time.Now())
	require.NoError(t, err)
	last, err := st.LoadLast(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last.Version)
	appendN(t, st, a, 1, 1)
	all, err := st.Load(ctx, a, 1)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, versions(all))
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
