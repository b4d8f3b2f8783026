package natsconn

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ports are distinct, below the ephemeral range, and free to bind.
func TestLoopbackPortsAreFreeAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := LoopbackPorts(5)
	require.NoError(t, err)
	require.Len(t, ports, 5)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d twice", p)
		seen[p] = true
		assert.GreaterOrEqual(t, p, portLow)
		assert.Less(t, p, portHigh, "below the ephemeral range")
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		require.NoError(t, err, "port %d is free", p)
		require.NoError(t, l.Close())
	}
}
