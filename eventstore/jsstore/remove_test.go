package jsstore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

func TestRemovePurgesOnlyThroughTheGivenSequence(t *testing.T) {
	// Given a removable context with two aggregates, and another store
	// (another process) that has read the first one
	st, js, _ := newStore(t, jsstore.WithRemovable("orders"))
	gone, kept := order("o-gone"), order("o-kept")
	hist := appendN(t, st, gone, 0, 3)
	appendN(t, st, kept, 0, 2)
	other, err := jsstore.New(js, jsstore.WithRemovable("orders"))
	require.NoError(t, err)
	_, err = other.LoadLast(t.Context(), gone)
	require.NoError(t, err)

	// When the first one's history is removed through its last sequence
	n, err := st.Remove(t.Context(), gone, hist[2].Seq)
	require.NoError(t, err)

	// Then its three messages are gone, the other aggregate is untouched
	assert.Equal(t, uint64(3), n, "the three messages of o-gone are purged")
	_, err = st.LoadLast(t.Context(), gone)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "a removed aggregate has no streams")
	k, err := st.Load(t.Context(), kept, 1)
	require.NoError(t, err)
	assert.Len(t, k, 2, "the other aggregate keeps its history")

	// And it starts again at version 1 from the store that had cached its position
	_, err = other.LoadLast(t.Context(), gone)
	require.ErrorIs(t, err, eventstore.ErrNotFound, "the other store does not believe its cached position")
	c, err := other.Append(t.Context(), newStream(gone, "again", nil), 0)
	require.NoError(t, err, "the removed aggregate can be appended to again from version 0")
	assert.Equal(t, uint64(1), c.Version)

	// And a second removal through the old sequence leaves the new message alone
	n, err = st.Remove(t.Context(), gone, hist[2].Seq)
	require.NoError(t, err)
	assert.Zero(t, n, "a repeated removal purges nothing")
	last, err := st.LoadLast(t.Context(), gone)
	require.NoError(t, err, "a message appended after the removed sequence stays")
	assert.Equal(t, c.Seq, last.Seq)

	info, err := js.Stream(t.Context(), st.StreamName("orders"))
	require.NoError(t, err)
	assert.True(t, info.CachedInfo().Config.DenyDelete, "messages still cannot be deleted one by one")
	assert.False(t, info.CachedInfo().Config.DenyPurge, "a removable context's stream allows purges")
}

func TestRemoveOnAStreamThatDeniesPurgesIsDenied(t *testing.T) {
	// Given a stream created before its context was removable
	old, js, _ := newStore(t)
	a := order("o-1")
	hist := appendN(t, old, a, 0, 2)

	// When a store that allows removal opens it
	st, err := jsstore.New(js, jsstore.WithRemovable("orders"))
	require.NoError(t, err)
	require.NoError(t, st.Provision(t.Context(), "orders"), "an existing deny-purge stream is still accepted")
	ok, err := st.Removable(t.Context(), "orders")
	require.NoError(t, err)
	assert.False(t, ok, "the existing stream keeps DenyPurge")

	// Then Remove is denied and nothing is lost
	_, err = st.Remove(t.Context(), a, hist[1].Seq)
	require.ErrorIs(t, err, jsstore.ErrRemovalDenied)
	assert.Contains(t, err.Error(), "docs/retention.md", "the error says where the migration is described")
	got, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	assert.Len(t, got, 2)
}

func TestRemovableRejectsBadContextsAndSequenceZero(t *testing.T) {
	_, err := jsstore.New(nil, jsstore.WithRemovable("bad context"))
	require.ErrorIs(t, err, jsstore.ErrInvalidOption)
	st, _, _ := newStore(t, jsstore.WithRemovable("orders"))
	_, err = st.Remove(t.Context(), order("o-1"), 0)
	require.ErrorIs(t, err, eventstore.ErrInvalid)
}
