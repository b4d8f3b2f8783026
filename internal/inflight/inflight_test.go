package inflight_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/natstest"
)

// A held message gets InProgress once it has been held over a tick; a
// dropped one gets nothing more.
func TestHeartbeatKeepsHeldMessages(t *testing.T) {
	held, dropped := &natstest.Msg{Subj: "a"}, &natstest.Msg{Subj: "b"}
	s := inflight.New()
	s.Add(held)
	s.Add(dropped)
	s.Drop(dropped)
	assert.Equal(t, 1, s.Len())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { s.Heartbeat(done, time.Millisecond); close(stopped) }()
	require.Eventually(t, func() bool { _, _, _, n := held.Settled(); return n >= 2 }, 30*time.Second, time.Millisecond, "InProgress on every tick")
	close(done)
	<-stopped
	_, _, _, n := dropped.Settled()
	assert.Zero(t, n, "a dropped message is left alone")
}
