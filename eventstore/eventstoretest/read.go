package eventstoretest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

// checkOrdering: histories interleaved in one log read back in version
// order, each stream at its sequence, with the previous one's sequence,
// and LoadAt reads a history as of one of its streams.
func checkOrdering[M any](t *testing.T, h Harness[M]) {
	s := h.Store
	a, b := agg(typeA, "one"), agg(typeB, "two")
	var as, bs []eventstore.Stream
	for v := range uint64(5) {
		as = append(as, appendN(t, s, a, v, 1)...)
		bs = append(bs, appendN(t, s, b, v, 1)...)
	}
	for name, hist := range map[string][]eventstore.Stream{"a": as, "b": bs} {
		for i, st := range hist {
			assert.Equal(t, uint64(i+1), st.Version, "%s: version %d", name, i+1)
			assert.Equal(t, i+1, body(t, st), "%s: version %d holds its own event", name, i+1)
			if i > 0 {
				assert.Greater(t, st.Seq, hist[i-1].Seq, "%s: later versions have later sequences", name)
				assert.Equal(t, hist[i-1].Seq, st.PrevSeq, "%s: version %d's PrevSeq is version %d's sequence", name, i+1, i)
			}
		}
	}
	all, err := s.Load(ctx(t), a, 1)
	require.NoError(t, err)
	assert.Equal(t, as, all, "Load reads a's history in version order")
	tail, err := s.Load(ctx(t), b, 3)
	require.NoError(t, err)
	assert.Equal(t, bs[2:], tail, "Load from version 3")
	past, err := s.Load(ctx(t), b, 6)
	require.NoError(t, err)
	assert.Empty(t, past, "Load from past the latest version is empty, not an error")
	at, err := s.LoadAt(ctx(t), a, 2, as[3].Seq)
	require.NoError(t, err)
	assert.Equal(t, as[1:4], at, "LoadAt reads versions 2 to 4, as of version 4, whatever came after")
	for i, st := range bs {
		got, err := s.LoadVersion(ctx(t), b, uint64(i+1))
		require.NoError(t, err)
		assert.Equal(t, st, got, "LoadVersion %d", i+1)
		got, err = s.GetSeq(ctx(t), suiteContext, st.Seq)
		require.NoError(t, err)
		assert.Equal(t, st, got, "GetSeq %d", st.Seq)
	}
	last, err := s.LoadLast(ctx(t), b)
	require.NoError(t, err)
	assert.Equal(t, bs[4], last, "LoadLast")
	v, err := s.LastVersion(ctx(t), a)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), v, "LastVersion")
	_, err = s.LoadAt(ctx(t), a, 1, bs[0].Seq)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadAt a sequence that holds another aggregate's stream")
}

// checkLongHistory: a history longer than a store's shortcuts read back
// whole, from the middle, and by version.
func checkLongHistory[M any](t *testing.T, h Harness[M]) {
	s, a := h.Store, agg(typeA, "long")
	const n = 60
	hist := appendN(t, s, a, 0, n)
	other := appendN(t, s, agg(typeA, "between"), 0, 1)[0]
	more := appendN(t, s, a, n, 1)
	hist = append(hist, more...)
	require.Greater(t, more[0].Seq, other.Seq)
	all, err := s.Load(ctx(t), a, 1)
	require.NoError(t, err)
	assert.Equal(t, hist, all, "Load of %d versions", n+1)
	mid, err := s.Load(ctx(t), a, 25)
	require.NoError(t, err)
	assert.Equal(t, hist[24:], mid, "Load from version 25")
	at, err := s.LoadAt(ctx(t), a, 1, hist[40].Seq)
	require.NoError(t, err)
	assert.Equal(t, hist[:41], at, "LoadAt version 41")
	for _, v := range []uint64{1, 2, 30, n, n + 1} {
		got, err := s.LoadVersion(ctx(t), a, v)
		require.NoError(t, err)
		assert.Equal(t, hist[v-1], got, "LoadVersion %d", v)
	}
}

// checkUnknown: what does not exist matches ErrNotFound.
func checkUnknown[M any](t *testing.T, h Harness[M]) {
	s, none := h.Store, agg(typeA, "nobody")
	_, err := s.LoadLast(ctx(t), none)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "LoadLast")
	_, err = s.Load(ctx(t), none, 1)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "Load")
	_, err = s.LoadVersion(ctx(t), none, 1)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "LoadVersion")
	_, err = s.LastVersion(ctx(t), none)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "LastVersion")

	a := agg(typeA, "somebody")
	c := appendN(t, s, a, 0, 2)
	_, err = s.LoadVersion(ctx(t), a, 3)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "LoadVersion past the latest")
	_, err = s.GetSeq(ctx(t), suiteContext, c[1].Seq+1000)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "GetSeq past the log's end")
	_, err = s.LoadAt(ctx(t), a, 1, c[1].Seq+1000)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "LoadAt past the log's end")
	_, err = s.GetSeq(ctx(t), "elsewhere", 1)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "GetSeq in a context with nothing stored")
}
