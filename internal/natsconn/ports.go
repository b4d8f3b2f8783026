package natsconn

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// Loopback ports for cluster routes, which must be known before the
// servers start, come from [portLow, portHigh): below Linux's ephemeral
// range (32768 and above), where any outgoing connection of the machine
// may take a port between the moment it is found free and the moment the
// server binds it.
const (
	portLow  = 20000
	portHigh = 32768
)

// LoopbackPorts returns n distinct ports of 127.0.0.1, below the
// ephemeral range, that were free when it returned. Another listener may
// still take one before the caller binds it; that fails the bind, loudly.
// It returns an error when it finds fewer than n free ports in 64 tries
// each. Safe for concurrent use.
func LoopbackPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 64*n {
			return nil, fmt.Errorf("natsconn: found %d free loopback ports below %d in %d tries, wanted %d", len(ports), portHigh, tries, n)
		}
		p := portLow + rand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken
		}
		defer l.Close() // held until all are found: no port twice
		ports = append(ports, p)
	}
	return ports, nil
}
