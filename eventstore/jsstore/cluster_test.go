package jsstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	// assertConflict appends at a version the aggregate has passed: the
	// answer must be a conflict. While the cluster is busy or electing, a
	// request may time out or find no leader first; only a definitive
	// answer counts, and it must be the conflict.
	assertConflict := func() {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, err := st.Append(t.Context(), newStream(a, "late", map[string]int{}), 1)
			require.Error(t, err, "an append at a stale version must not succeed")
			if errors.Is(err, eventstore.ErrConflict) {
				var ce *eventstore.ConflictError
				require.True(t, errors.As(err, &ce), "the conflict is a ConflictError: %v", err)
				return
			}
			require.True(t, transient(err), "a stale append gives ErrConflict, got %v", err)
			require.True(t, time.Now().Before(deadline), "no definitive answer within 60s; last: %v", err)
		}
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
	}, 60*time.Second, 50*time.Millisecond, "append version 5 after the leader died")
	assertConflict()
	got, err := st.Load(t.Context(), a, 1)
	require.NoError(t, err)
	assert.Equal(t, seq(1, 5), versions(got), "no version lost or duplicated across the failover")
}

// transient reports whether err is a request that got no answer in time,
// found no responder or was told to try again (503): the cluster was busy
// or electing a leader.
func transient(err error) bool {
	var ae *jetstream.APIError
	if errors.As(err, &ae) && ae.Code == 503 {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrConnectionReconnecting)
}
