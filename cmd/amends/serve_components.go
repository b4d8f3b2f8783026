package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/metrics"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/server"
)

// shutdownTimeout bounds how long the HTTP server waits for in-flight
// requests at shutdown.
const shutdownTimeout = 15 * time.Second

// controlPlane builds the projection, the scheduler and the HTTP API, binds
// the API's listener, and returns them as components with the API's URL.
func controlPlane(ctx context.Context, cfg serveConfig, nc *nats.Conn, js jetstream.JetStream, store *jsstore.Store, logger *slog.Logger) ([]component, string, error) {
	views, err := projection.OpenViews(ctx, js, projection.WithBucketReplicas(cfg.replicas), projection.WithBucketStorage(cfg.storage))
	if err != nil {
		return nil, "", fmt.Errorf("projection: %w", err)
	}
	quar, err := quarantine.New(js, quarantine.WithReplicas(cfg.replicas), quarantine.WithStorage(cfg.storage), quarantine.WithLogger(logger.With("component", "quarantine"), 0))
	if err != nil {
		return nil, "", fmt.Errorf("quarantine: %w", err)
	}
	proj, err := projection.NewProjector(js, store, views, projection.WithLogger(logger.With("component", "projector")), projection.WithQuarantine(quar))
	if err != nil {
		return nil, "", err
	}
	index, err := projection.NewIndex(views, store)
	if err != nil {
		return nil, "", err
	}
	svc := aggregate.NewService(store)
	batches, err := server.OpenBatches(ctx, js, cfg.replicas)
	if err != nil {
		return nil, "", err
	}
	health, err := openHealth(ctx, js, cfg.storage, cfg.replicas)
	if err != nil {
		return nil, "", err
	}
	probe := newWriteProbe(health, time.Now)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.Records(index), metrics.Projector(proj), metrics.Quarantine(quar))
	components := []component{{"projector", proj.Run}, {"index", index.Run}}

	if sc := cfg.scheduler; sc != nil {
		leases, err := scheduler.OpenLeases(ctx, js, scheduler.WithLeaseTTL(sc.leaseTTL), scheduler.WithLeaseReplicas(cfg.replicas))
		if errors.Is(err, scheduler.ErrIncompatibleBucket) {
			return nil, "", fmt.Errorf("--lease-ttl %s (or --replicas %d): %w; every serve shares the lease bucket, so use the settings it was created with, or delete it (nats kv del %s) while no serve runs",
				show(sc.leaseTTL), cfg.replicas, err, scheduler.DefaultLeaseBucket)
		}
		if err != nil {
			return nil, "", fmt.Errorf("scheduler: %w", err)
		}
		sched, err := scheduler.New(index, svc, leases,
			scheduler.WithPeriod(sc.period), scheduler.WithInitialDelay(sc.delay), scheduler.WithBatch(sc.batch),
			scheduler.WithConcurrency(sc.workers), scheduler.WithLogger(logger.With("component", "scheduler")))
		if err != nil {
			return nil, "", fmt.Errorf("scheduler: %w", err)
		}
		reg.MustRegister(metrics.Scheduler(sched, index))
		components = append(components, component{"scheduler", sched.Run})
	}

	api := server.New(server.Config{
		Queries: index, Commands: svc, Batches: batches, Tokens: cfg.tokens, Registry: reg, Quarantine: quar,
		Logger: logger.With("component", "http"),
		Ready:  readiness(natsConnected(nc), indexCurrent(index), probe.check),
	})
	l, err := net.Listen("tcp", cfg.http)
	if err != nil {
		return nil, "", fmt.Errorf("--http %s: %w", cfg.http, err)
	}
	url := "http://" + l.Addr().String()
	if len(cfg.tokens) == 0 {
		logger.Warn("the HTTP API has no tokens: anyone on this machine can read and steer records", "http", url)
	}
	hs := newHTTPServer(l, api.Handler(), cfg.httpMaxConns, httpWriteTimeout, logger.With("component", "http"))
	components = append(components, component{"http", func(ctx context.Context) error {
		logger.Info("HTTP API serving", "url", url, "tokens", len(cfg.tokens), "max_connections", cfg.httpMaxConns)
		return hs.run(ctx)
	}})
	return components, url, nil
}
