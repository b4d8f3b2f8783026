package natstest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/natsconn"
)

// Cluster is a JetStream cluster of servers on loopback with random ports,
// owned by a test.
type Cluster struct {
	// Servers are the nodes; a stopped node's entry is nil until Restart.
	Servers []*server.Server

	name  string
	dirs  []string
	ports []int // route ports, fixed so restarted nodes rejoin
	tb    testing.TB
}

// NewCluster starts n clustered JetStream servers on 127.0.0.1 and waits
// until they have elected a meta leader. It registers their shutdown with
// tb.Cleanup.
func NewCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{name: "natstest", tb: tb, Servers: make([]*server.Server, n), dirs: make([]string, n), ports: freePorts(tb, n)}
	for i := range n {
		c.dirs[i] = tb.TempDir()
	}
	tb.Cleanup(c.shutdownAll)
	for i := range n {
		c.startNode(i)
	}
	for i, s := range c.Servers {
		if !s.ReadyForConnections(readyTimeout) {
			tb.Fatalf("natstest: cluster node %d not ready within %s", i, readyTimeout)
		}
	}
	c.WaitForMetaLeader()
	return c
}

func (c *Cluster) startNode(i int) {
	c.tb.Helper()
	// A JetStream cluster needs its routes configured up front.
	var routes []*url.URL
	for j, p := range c.ports {
		if j != i {
			routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
	}
	opts := &server.Options{
		ServerName: fmt.Sprintf("n%d", i),
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   c.dirs[i],
		NoLog:      true,
		NoSigs:     true,
		Cluster:    server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: c.ports[i]},
		Routes:     routes,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		c.tb.Fatalf("natstest: new cluster node %d: %v", i, err)
	}
	s.Start()
	c.Servers[i] = s
}

// freePorts finds n loopback route ports below the ephemeral range
// (natsconn.LoopbackPorts).
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports, err := natsconn.LoopbackPorts(n)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	return ports
}

func (c *Cluster) shutdownAll() {
	for _, s := range c.Servers {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
}

// URLs returns the client URLs of the running nodes, comma separated.
func (c *Cluster) URLs() string {
	var urls []string
	for _, s := range c.Servers {
		if s != nil {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// APITimeout bounds a JetStream API request made without a deadline on the
// connections of Server.Connect and Cluster.Connect. A busy machine running
// tests in parallel, a replicated request waiting for its quorum or an
// election after a node is lost take far longer than the client's 5 s
// default.
const APITimeout = 30 * time.Second

// Connect opens a client connection to all running nodes (so it survives the
// loss of one), closed by the test's cleanup, and a JetStream context on it
// whose requests time out after APITimeout.
func (c *Cluster) Connect() (*nats.Conn, jetstream.JetStream) {
	c.tb.Helper()
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.Name(c.tb.Name()))
	if err != nil {
		c.tb.Fatalf("natstest: connect to cluster: %v", err)
	}
	c.tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(APITimeout))
	if err != nil {
		c.tb.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// WaitForMetaLeader waits until a running node is the JetStream meta leader
// and knows every node of the cluster as a peer, so that a replicated stream
// can be placed at once.
func (c *Cluster) WaitForMetaLeader() {
	c.tb.Helper()
	c.waitFor("JetStream meta leader that knows every peer", func() bool {
		for _, s := range c.Servers {
			if s != nil && s.JetStreamIsLeader() {
				return len(s.JetStreamClusterPeers()) == len(c.Servers)
			}
		}
		return false
	})
}

// MetaLeader waits for and returns the index of the node that is the
// JetStream meta leader.
func (c *Cluster) MetaLeader() int {
	c.tb.Helper()
	leader := -1
	c.waitFor("JetStream meta leader", func() bool {
		for i, s := range c.Servers {
			if s != nil && s.JetStreamIsLeader() {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// StepDownStream makes the leader of stream (in the global account) step
// down, so its replicas elect another. It returns an error if no running
// node leads the stream now (for example during an election).
func (c *Cluster) StepDownStream(stream string) error {
	for _, s := range c.Servers {
		if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return s.JetStreamStepdownStream(server.DEFAULT_GLOBAL_ACCOUNT, stream)
		}
	}
	return fmt.Errorf("natstest: no running node leads stream %s", stream)
}

// StreamLeader waits for and returns the index of the node that leads the
// stream in the global account.
func (c *Cluster) StreamLeader(stream string) int {
	c.tb.Helper()
	leader := -1
	c.waitFor("a leader of stream "+stream, func() bool {
		for i, s := range c.Servers {
			if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// Stop shuts node i down, keeping its store directory for Restart.
func (c *Cluster) Stop(i int) {
	c.tb.Helper()
	s := c.Servers[i]
	if s == nil {
		return
	}
	s.Shutdown()
	s.WaitForShutdown()
	c.Servers[i] = nil
}

// Restart starts a stopped node i again on its store directory.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	if c.Servers[i] != nil {
		c.tb.Fatalf("natstest: node %d is running", i)
	}
	c.startNode(i)
	if !c.Servers[i].ReadyForConnections(readyTimeout) {
		c.tb.Fatalf("natstest: restarted node %d not ready within %s", i, readyTimeout)
	}
}

func (c *Cluster) waitFor(what string, ok func() bool) {
	c.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			c.tb.Fatalf("natstest: no %s within 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
