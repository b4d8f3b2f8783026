package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/internal/wait"
)

// benchCluster starts n JetStream servers clustered over loopback, each
// with its own temporary data directory, waits until they have a meta
// leader, and connects to all of them. The returned function closes the
// connection, shuts the servers down and removes their data.
func benchCluster(ctx context.Context, n int) (*nats.Conn, func(), error) {
	dir, err := os.MkdirTemp("", "amends-bench-cluster-")
	if err != nil {
		return nil, nil, err
	}
	servers := make([]*server.Server, 0, n)
	shutdown := func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
		_ = os.RemoveAll(dir)
	}
	ports, err := natsconn.LoopbackPorts(n)
	if err != nil {
		shutdown()
		return nil, nil, err
	}
	for i := range n {
		var routes []*url.URL
		for j, p := range ports {
			if j != i {
				routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
			}
		}
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("bench-%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprint(i)), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "amends-bench", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		if err != nil {
			shutdown()
			return nil, nil, fmt.Errorf("bench cluster node %d: %w", i, err)
		}
		s.Start()
		servers = append(servers, s)
	}
	var urls []string
	for i, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			shutdown()
			return nil, nil, fmt.Errorf("bench cluster node %d did not accept connections within 10s", i)
		}
		urls = append(urls, s.ClientURL())
	}
	err = wait.Until(ctx, fmt.Sprintf("bench cluster of %d nodes: a JetStream meta leader elected", n), 50*time.Millisecond, 30*time.Second,
		func() bool { return clusterReady(servers) })
	if err != nil {
		shutdown()
		return nil, nil, err
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name("amends bench"))
	if err != nil {
		shutdown()
		return nil, nil, err
	}
	return nc, func() { nc.Close(); shutdown() }, nil
}

// clusterReady reports whether a node is meta leader and knows every
// node as a peer, so replicated streams can be placed at once.
func clusterReady(servers []*server.Server) bool {
	for _, s := range servers {
		if s.JetStreamIsLeader() {
			return len(s.JetStreamClusterPeers()) == len(servers)
		}
	}
	return false
}
