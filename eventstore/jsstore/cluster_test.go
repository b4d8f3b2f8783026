package jsstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// On a replicated stream JetStream reports a lost race with code 10164
// instead of 10071; the store's contract must not change, also after the
// stream leader dies.
func TestReplicatedStreamConflicts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := natstest.NewCluster(t, 3)
	_, js := c.Connect()
	st, err := jsstore.New(js, jsstore.WithReplicas(3))
	require.NoError(t, err)
	require.NoError(t, st.Provision(t.Context(), "orders"))

	a := order("r3")
	appendN(t, st, a, 0, 3)
	assertConflict := func() {
		t.Helper()
		_, err := st.Append(t.Context(), newStream(a, "late", map[string]int{}), 1)
		require.ErrorIs(t, err, eventstore.ErrConflict)
		var ce *eventstore.ConflictError
		require.True(t, errors.As(err, &ce))
	}
	assertConflict()

	// A retried append is still recognised on R3.
	s := newStream(a, "step", map[string]int{})
	first, err := st.Append(t.Context(), s, 3)
	require.NoError(t, err)
	again, err := st.Append(t.Context(), s, 3)
	require.NoError(t, err)
	assert.Equal(t, first.Seq, again.Seq)

	leader := c.StreamLeader(st.StreamName("orders"))
	c.Stop(leader)
	c.StreamLeader(st.StreamName("orders")) // a new leader is elected

	// Appends resume on the new leader once the client has reconnected.
	require.Eventually(t, func() bool {
		_, err := st.Append(t.Context(), newStream(a, "step", map[string]int{}), 4)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "append version 5 after the leader died")
	assertConflict()
	got, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	assert.Equal(t, seq(1, 5), versions(got), "no version lost or duplicated across the failover")
}
