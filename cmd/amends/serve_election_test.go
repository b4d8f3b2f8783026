package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
)

// Regression: serve exited 1 when it started while the cluster had no
// meta leader or a peer was down ("create KV bucket
// amends_compensation_views: context deadline exceeded"). Now start-up
// waits for the cluster, logging what it waits for, and comes up once the
// node is back.
func TestServeStartsDuringAnElection(t *testing.T) {
	cluster := natstest.NewCluster(t, 3)
	_, js := cluster.Connect()
	store, err := jsstore.New(js, jsstore.WithReplicas(3))
	require.NoError(t, err)
	require.NoError(t, store.Provision(t.Context(), aggregate.Context), "the event store stream exists, as after an earlier serve")

	// Stop the meta leader: the others must elect a new one, and no R3
	// bucket can be placed until the node is back.
	down := cluster.MetaLeader()
	cluster.Stop(down)

	var c cli
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan serveInfo, 1)
	a := c.app()
	a.serveReady = func(i serveInfo) { ready <- i }
	code := make(chan int, 1)
	go func() {
		code <- execute(ctx, a, []string{"serve", "--nats-url", cluster.URLs(), "--replicas", "3", "--http", "127.0.0.1:0"})
	}()
	t.Cleanup(func() {
		cancel()
		<-code
	})

	// Start-up waits (and says what for) rather than exit. The cluster may
	// not have marked the stopped node offline yet and place the buckets on
	// it all the same (a quorum of two acknowledges them): then serve is
	// ready at once, which is no failure; exiting is.
	deadline := time.After(waitLimit)
	isReady := false
	for !isReady && !strings.Contains(c.stderr.String(), "start-up: waiting for JetStream") {
		select {
		case <-ready:
			isReady = true
			t.Log("serve was ready before the cluster noticed the node was down")
		case got := <-code:
			code <- got // for the cleanup
			t.Fatalf("serve exited with %d while the cluster was electing; stderr:\n%s", got, c.stderr.String())
		case <-deadline:
			t.Fatalf("serve did not say what it waits for within %s; stderr:\n%s", waitLimit, c.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cluster.Restart(down)
	if !isReady {
		select {
		case <-ready:
		case got := <-code:
			code <- got
			t.Fatalf("serve exited with %d; stderr:\n%s", got, c.stderr.String())
		case <-time.After(2 * waitLimit):
			t.Fatalf("serve not ready within %s of the node's return; stderr:\n%s", 2*waitLimit, c.stderr.String())
		}
	}
	cancel()
	require.Equal(t, exitOK, <-code, "stderr:\n%s", c.stderr.String())
	code <- exitOK
}

// serve's start-up and a processor's provisioning succeed while the event
// store stream's leader keeps stepping down.
func TestServeAndProcessorStartWhileTheStreamLeaderStepsDown(t *testing.T) {
	cluster := natstest.NewCluster(t, 3)
	_, js := cluster.Connect()
	store, err := jsstore.New(js, jsstore.WithReplicas(3))
	require.NoError(t, err)
	require.NoError(t, store.Provision(t.Context(), aggregate.Context))
	stream := store.StreamName(aggregate.Context)

	// Start-up begins right after the stream leader stepped down, and it
	// keeps stepping down until start-up is done.
	require.NoError(t, cluster.StepDownStream(stream))
	stop := make(chan struct{})
	var stepped atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		pace := time.NewTicker(100 * time.Millisecond)
		defer pace.Stop()
		for {
			if cluster.StepDownStream(stream) == nil {
				stepped.Add(1)
			}
			select {
			case <-stop:
				return
			case <-pace.C:
			}
		}
	})
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	})

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := processor.New(js, store, "shop", processor.WithLogger(log))
	require.NoError(t, err)
	require.NoError(t, p.Register(processor.Function{Processor: "Mailer", Name: "onPlaced", AggregateTypes: []string{"order"}},
		func(context.Context, *processor.Delivery) error { return nil }))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()

	var c cli
	r := c.startServeWithin(t, 3*waitLimit, "serve", "--nats-url", cluster.URLs(), "--replicas", "3", "--startup-timeout", (3 * waitLimit).String())
	select {
	case <-p.Ready():
	case err := <-errc:
		t.Fatalf("Run returned %v while leaders stepped down", err)
	case <-time.After(processor.ProvisionTimeout):
		t.Fatalf("processor not ready within %s", processor.ProvisionTimeout)
	}
	close(stop)
	wg.Wait()
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
	cancel()
	require.NoError(t, <-errc)
	t.Logf("%d more step-downs during start-up", stepped.Load())
}
