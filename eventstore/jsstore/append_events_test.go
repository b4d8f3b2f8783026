package jsstore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

func TestAppendEventsFillsIdsAndTime(t *testing.T) {
	now := time.UnixMilli(1735000123456)
	st, _, _ := newStore(t, jsstore.WithClock(func() time.Time { return now }))
	a := order("o-1")
	c1, err := st.AppendEvents(t.Context(), a, 0,
		eventstore.NewEvent{Name: "order_placed", Body: map[string]string{"sku": "A"}},
		eventstore.NewEvent{Name: "order_noted"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c1.Version)
	assert.Equal(t, int64(1735000123456), c1.CreateTime, "stamped by the store's clock")
	assert.NotEmpty(t, c1.ID)
	assert.NotEmpty(t, c1.CommandID)
	require.Len(t, c1.Events, 2)
	assert.NotEqual(t, c1.Events[0].ID, c1.Events[1].ID, "each event gets its own id")
	assert.JSONEq(t, `{"sku":"A"}`, string(c1.Events[0].Body))

	c2, err := st.AppendEvents(t.Context(), a, 1, eventstore.NewEvent{Name: "order_shipped", Body: json.RawMessage(`{"carrier":"DHL"}`)})
	require.NoError(t, err)
	loaded, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	require.Len(t, loaded, 2)
	assert.Equal(t, c1.ID, loaded[0].ID)
	assert.Equal(t, c2.Events[0].ID, loaded[1].Events[0].ID)

	_, err = st.AppendEvents(t.Context(), a, 1, eventstore.NewEvent{Name: "order_shipped"})
	require.ErrorIs(t, err, eventstore.ErrConflict, "the expected version is checked")
}

func TestAppendStampsAZeroCreateTime(t *testing.T) {
	now := time.UnixMilli(1735000999000)
	st, _, _ := newStore(t, jsstore.WithClock(func() time.Time { return now }))
	s := newStream(order("o-1"), "order_placed", map[string]string{})
	s.CreateTime = 0
	c, err := st.Append(t.Context(), s, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1735000999000), c.CreateTime)
	last, err := st.LoadLast(t.Context(), order("o-1"))
	require.NoError(t, err)
	assert.Equal(t, int64(1735000999000), last.CreateTime, "a zero CreateTime is never stored")

	s = newStream(order("o-2"), "order_placed", map[string]string{})
	s.ID, s.CreateTime = "s-2", -5
	_, err = st.Append(t.Context(), s, 0)
	require.ErrorIs(t, err, eventstore.ErrInvalid)
	assert.Equal(t, `stream "s-2" createTime is -5; it must be epoch milliseconds after 1970, or 0 for now: eventstore: invalid`, err.Error())

	_, err = jsstore.New(nil, jsstore.WithClock(nil))
	require.ErrorIs(t, err, jsstore.ErrInvalidOption)
}

func TestOptionMessagesCarryOneSentinel(t *testing.T) {
	_, err := jsstore.New(nil, jsstore.WithSubjectPrefix("a.b c"))
	require.ErrorIs(t, err, jsstore.ErrInvalidOption)
	assert.Equal(t, `subject prefix "a.b c": subject prefix token "b c" has ' ' at byte 1; only [A-Za-z0-9_-] are allowed: jsstore: invalid option`, err.Error())
}
