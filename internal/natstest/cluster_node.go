package natstest

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnectNode opens a client connection to node i alone, closed by the
// test's cleanup, and a JetStream context on it whose requests time out
// after APITimeout. Requests that any replica may answer (direct gets)
// then usually go to that node first, which is how a test makes a
// follower answer reads.
func (c *Cluster) ConnectNode(i int) (*nats.Conn, jetstream.JetStream) {
	c.tb.Helper()
	s := c.Servers[i]
	if s == nil {
		c.tb.Fatalf("natstest: node %d is not running", i)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.Name(c.tb.Name()))
	if err != nil {
		c.tb.Fatalf("natstest: connect to node %d: %v", i, err)
	}
	c.tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(APITimeout))
	if err != nil {
		c.tb.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}
