package natsconn_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natsconn"
)

func TestDrainHandlesDeliveredMessagesThenCloses(t *testing.T) {
	e := startEmbedded(t, natsconn.EmbeddedConfig{})
	sub, _ := connectJS(t, e)
	pub, _ := connectJS(t, e)

	var handled atomic.Int64
	_, err := sub.Subscribe("work", func(*nats.Msg) { handled.Add(1) })
	require.NoError(t, err)
	require.NoError(t, sub.Flush())
	const n = 100
	for range n {
		require.NoError(t, pub.Publish("work", nil))
	}
	require.NoError(t, pub.Flush())
	// Wait until the server has delivered everything to the subscriber's
	// connection, so that draining it has messages to finish.
	require.Eventually(t, func() bool { return e.Server().NumClients() == 2 && outMsgs(e) >= n }, 10*time.Second, time.Millisecond)

	require.NoError(t, natsconn.Drain(t.Context(), sub))
	assert.True(t, sub.IsClosed(), "the connection must be closed when Drain returns")
	assert.Equal(t, int64(n), handled.Load(), "delivered messages must be handled before the close")
	assert.NoError(t, natsconn.Drain(t.Context(), sub), "draining a closed connection is a no-op")
}

func outMsgs(e *natsconn.Embedded) int64 {
	v, err := e.Server().Varz(nil)
	if err != nil {
		return 0
	}
	return v.OutMsgs
}

func TestDrainGivesUpWhenContextEnds(t *testing.T) {
	e := startEmbedded(t, natsconn.EmbeddedConfig{})
	nc, _ := connectJS(t, e)
	release := make(chan struct{})
	entered := make(chan struct{})
	_, err := nc.Subscribe("slow", func(*nats.Msg) {
		close(entered)
		<-release
	})
	require.NoError(t, err)
	require.NoError(t, nc.Publish("slow", nil))
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow handler did not receive the message within 10s")
	}
	defer close(release)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = natsconn.Drain(ctx, nc)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, nc.IsClosed(), "Drain must close a connection it could not drain in time")
}
