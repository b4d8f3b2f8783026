package processor_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/processor"
)

// Regression: Run failed ("provision stream …: context deadline exceeded")
// when it started while the cluster elected a meta leader. Now it waits,
// saying what for, and starts once the cluster can place its streams.
func TestRunProvisionsThroughAnElection(t *testing.T) {
	cluster := natstest.NewCluster(t, 3)
	_, js := cluster.Connect()
	store, err := jsstore.New(js, jsstore.WithReplicas(3))
	require.NoError(t, err)
	var logs testlog.Buffer
	p, err := processor.New(js, store, ctxName, processor.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), newCounter().handle))

	down := cluster.MetaLeader()
	cluster.Stop(down)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = p.Wait()
	})

	// The cluster may not have marked the stopped node offline yet and
	// place the stream on it all the same (a quorum of two acknowledges
	// it): then Run is ready at once, which is no failure; returning is.
	deadline := time.After(waitFor)
	ready := false
	for !ready && !strings.Contains(logs.String(), "start-up: waiting for JetStream") {
		select {
		case err := <-errc:
			t.Fatalf("Run returned %v while the cluster was electing; log:\n%s", err, logs.String())
		case <-p.Ready():
			ready = true
			t.Log("Run was ready before the cluster noticed the node was down")
		case <-deadline:
			t.Fatalf("Run did not say what it waits for within %s; log:\n%s", waitFor, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cluster.Restart(down)
	select {
	case <-p.Ready():
	case err := <-errc:
		t.Fatalf("Run returned %v; log:\n%s", err, logs.String())
	case <-time.After(processor.ProvisionTimeout):
		t.Fatalf("Run not ready within %s of the node's return; log:\n%s", processor.ProvisionTimeout, logs.String())
	}
	cancel()
	require.NoError(t, <-errc)
}
