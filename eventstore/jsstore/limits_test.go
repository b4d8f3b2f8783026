package jsstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// A request whose subject is too long makes the NATS server close the
// connection ("maximum control line exceeded"): nothing over the limits may
// ever be sent.
func TestNothingOverTheLimitsIsSent(t *testing.T) {
	st, js, _ := newStore(t)
	nc := js.Conn()
	long := strings.Repeat("a", 4000)
	appendN(t, st, order("o-1"), 0, 1)

	for name, a := range map[string]eventstore.AggregateID{
		"4000-byte id":      order(long),
		"257-byte id":       order(strings.Repeat("x", eventstore.MaxIDLength+1)),
		"4000-byte context": {Context: long, Type: "order", ID: "o-1"},
		"4000-byte type":    {Context: "orders", Type: long, ID: "o-1"},
	} {
		_, err := st.Load(t.Context(), a, 1)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "Load %s", name)
		_, err = st.LoadLast(t.Context(), a)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "LoadLast %s", name)
		_, err = st.LoadVersion(t.Context(), a, 1)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "LoadVersion %s", name)
		_, _, err = st.LoadLastIfChanged(t.Context(), a, 0)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "LoadLastIfChanged %s", name)
		_, err = st.Append(t.Context(), newStream(a, "step", 1), 0)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "Append %s", name)
		_, err = st.Subject(a)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "Subject %s", name)
		require.True(t, nc.IsConnected(), "still connected after %s", name)
	}
	_, err := st.GetSeq(t.Context(), long, 1)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "GetSeq of a 4000-byte context")
	require.NoError(t, st.Provision(t.Context(), "orders"))
	assert.ErrorIs(t, st.Provision(t.Context(), long), eventstore.ErrInvalid)
	require.True(t, nc.IsConnected())

	got, err := st.LoadLast(t.Context(), order("o-1"))
	require.NoError(t, err, "the connection still works")
	assert.Equal(t, uint64(1), got.Version)
}

func TestPrefixesAreBounded(t *testing.T) {
	_, js, _ := newStore(t)
	tooLong := strings.Repeat("a", jsstore.MaxPrefixLength+1)
	tokens := strings.TrimSuffix(strings.Repeat("abcdefgh.", 40), ".") // valid tokens, 359 bytes
	for name, opt := range map[string]jsstore.Option{
		"subject prefix of many tokens": jsstore.WithSubjectPrefix(tokens),
		"stream prefix":                 jsstore.WithStreamPrefix(tooLong),
		"api prefix":                    jsstore.WithAPIPrefix(tooLong + "."),
	} {
		_, err := jsstore.New(js, opt)
		assert.ErrorIs(t, err, jsstore.ErrInvalidOption, name)
	}
	ok := strings.TrimSuffix(strings.Repeat("abcdefg.", 16), ".") // 127 bytes
	st, err := jsstore.New(js, jsstore.WithSubjectPrefix(ok), jsstore.WithStreamPrefix(strings.Repeat("S", jsstore.MaxPrefixLength)))
	require.NoError(t, err, "prefixes at the limit")
	a := eventstore.AggregateID{Context: strings.Repeat("c", eventstore.MaxNameLength), Type: strings.Repeat("t", eventstore.MaxNameLength), ID: strings.Repeat("é", eventstore.MaxIDLength/2)}
	subj, err := st.Subject(a)
	require.NoError(t, err, "the longest valid aggregate at the longest prefixes")
	assert.LessOrEqual(t, len(subj), jsstore.MaxSubjectLength)
	appendN(t, st, a, 0, 2)
	got, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, versions(got))
}
