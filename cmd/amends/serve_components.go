package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/transient"
	"github.com/amends-dev/amends/metrics"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/retention"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/server"
)

// shutdownTimeout bounds how long the HTTP server waits for in-flight
// requests at shutdown.
const shutdownTimeout = 15 * time.Second

// controlPlane builds the projection, the scheduler and the HTTP API, binds
// the API's listener, and returns them as components with the API's URL.
// It opens the buckets within ctx, retrying through transient errors (an
// election); ctx bounds start-up only, the components run on their own.
func controlPlane(ctx context.Context, cfg serveConfig, nc *nats.Conn, js jetstream.JetStream, store *jsstore.Store, logger *slog.Logger) ([]component, string, error) {
	startup := logger.With("component", "startup")
	mismatch := &mismatches{}
	if cfg.repairBuckets {
		if err := repairBuckets(ctx, cfg, js, startup); err != nil {
			return nil, "", err
		}
	}
	views, err := retryOpen(ctx, startup, "the views bucket "+projection.DefaultBucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		views, err := projection.OpenViews(ctx, js, projection.WithBucketReplicas(cfg.replicas), projection.WithBucketStorage(cfg.storage))
		if errors.Is(err, projection.ErrIncompatibleBucket) {
			// Used as it is (projected views work on any settings),
			// reported by /readyz until repaired.
			mismatch.add(startup, "views", err)
			return js.KeyValue(ctx, projection.DefaultBucket)
		}
		return views, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("projection: %w", err)
	}
	sightings := &unauditedSightings{logger: logger.With("component", "audit")}
	quar, err := quarantine.New(js, quarantine.WithReplicas(cfg.replicas), quarantine.WithStorage(cfg.storage), quarantine.WithLogger(logger.With("component", "quarantine"), 0),
		quarantine.WithUnaudited(sightings.record))
	if err != nil {
		return nil, "", fmt.Errorf("quarantine: %w", err)
	}
	proj, err := projection.NewProjector(js, store, views, projection.WithLogger(logger.With("component", "projector")), projection.WithQuarantine(quar))
	if err != nil {
		return nil, "", err
	}
	snap, err := snapshotOption(ctx, cfg, js, startup)
	if err != nil {
		return nil, "", fmt.Errorf("index snapshots: %w", err)
	}
	index, err := projection.NewIndex(views, store, append([]projection.IndexOption{projection.WithReprojector(proj), projection.WithIndexQuarantine(quar),
		projection.WithAudit(cfg.indexAuditRate), projection.WithIndexLogger(logger.With("component", "index"))}, snap...)...)
	if err != nil {
		return nil, "", err
	}
	svc := aggregate.NewService(store)
	batches, err := retryOpen(ctx, startup, "the batch bucket "+server.DefaultBatchBucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return server.OpenBatches(ctx, js, cfg.replicas)
	})
	if err != nil {
		return nil, "", err
	}
	health, err := retryOpen(ctx, startup, "the health bucket "+healthBucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return openHealth(ctx, js, cfg.storage, cfg.replicas)
	})
	if err != nil {
		return nil, "", err
	}
	probe := newWriteProbe(health, time.Now)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.Records(index), metrics.Projector(proj), metrics.Quarantine(quar),
		metrics.Failures(index, nil))
	components := []component{{"projector", proj.Run}, {"index", index.Run}}
	in, err := openIntel(ctx, cfg, js, quar, startup, logger)
	if err != nil {
		return nil, "", err
	}
	components = append(components, in.component())
	circ, err := openCircuits(ctx, cfg, js, quar, startup, logger)
	if err != nil {
		return nil, "", err
	}
	components = append(components, circ.component())
	reg.MustRegister(metrics.Circuits(circ.watcher))

	var sweeper *retention.Sweeper
	if sc := cfg.scheduler; sc != nil {
		leases, err := retryOpen(ctx, startup, "the lease bucket "+scheduler.DefaultLeaseBucket, func(ctx context.Context) (*scheduler.Leases, error) {
			leases, err := scheduler.OpenLeases(ctx, js, scheduler.WithLeaseTTL(sc.leaseTTL), scheduler.WithLeaseReplicas(cfg.replicas))
			if errors.Is(err, scheduler.ErrIncompatibleBucket) {
				// Every serve shares the lease: go on with the bucket's own
				// TTL, so that they agree, and report it until repaired.
				mismatch.add(startup, "lease", fmt.Errorf("--lease-ttl %s (or --replicas %d): %w", show(sc.leaseTTL), cfg.replicas, err))
				return scheduler.BindLeases(ctx, js, scheduler.DefaultLeaseBucket)
			}
			return leases, err
		})
		if err != nil {
			return nil, "", fmt.Errorf("scheduler: %w", err)
		}
		sopts := append(in.schedulerOptions(index), circ.schedulerOption(js, store, index, sc.drainRate))
		sweeper, err = openRetention(ctx, cfg, js, store, views, index, proj, quar, startup, logger)
		if err != nil {
			return nil, "", err
		}
		if sweeper != nil {
			sopts = append(sopts, scheduler.WithRetention(sweeper))
		}
		sched, err := scheduler.New(index, svc, leases, append([]scheduler.Option{
			scheduler.WithPeriod(sc.period), scheduler.WithInitialDelay(sc.delay), scheduler.WithBatch(sc.batch),
			scheduler.WithRate(sc.rate), scheduler.WithConcurrency(sc.workers), scheduler.WithLogger(logger.With("component", "scheduler")), scheduler.WithReprojector(proj)},
			sopts...)...)
		if err != nil {
			return nil, "", fmt.Errorf("scheduler: %w", err)
		}
		reg.MustRegister(metrics.Scheduler(sched, index))
		components = append(components, component{"scheduler", sched.Run})
	}

	notifier, err := notifierComponents(cfg, js, store, svc, quar, reg, logger)
	if err != nil {
		return nil, "", fmt.Errorf("notifier: %w", err)
	}
	components = append(components, notifier...)

	ordering, err := retryOpen(ctx, startup, "the holds and replays buckets", func(ctx context.Context) (*server.Ordering, error) {
		return openOrdering(ctx, js, store, svc, quar, cfg.replicas)
	})
	if err != nil {
		return nil, "", err
	}
	sessions, err := retryOpen(ctx, startup, "the session bucket "+server.DefaultSessionBucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return server.OpenSessions(ctx, js, cfg.replicas)
	})
	if err != nil {
		return nil, "", err
	}
	auditLog, err := retryOpen(ctx, startup, "the audit stream "+audit.DefaultStream, func(ctx context.Context) (*audit.Log, error) {
		return audit.Open(ctx, js, audit.Config{Replicas: cfg.replicas, Storage: cfg.storage})
	})
	if err != nil {
		return nil, "", err
	}
	sightings.log.Store(auditLog)
	httpLog := logger.With("component", "http")
	apiCfg := server.Config{
		Queries: index, Commands: svc, Batches: batches, Tokens: cfg.tokens, Registry: reg, Quarantine: quar, Ordering: ordering, Rules: in.rules,
		Logger: httpLog, Sessions: sessions, Audit: auditLog, OIDC: cfg.oidc,
		AllowedHosts: cfg.allowedHosts, TrustedProxies: cfg.trustedProxies,
		Circuits: circ.server(),
	}
	checks := []readyCheck{natsConnected(nc), indexCurrent(index), probe.check, mismatch.check}
	var tokens *tokenReloader
	if cfg.tokensFile != "" {
		tokens = newTokenReloader(cfg.tokensFile, cfg.inlineTokens, nil, httpLog) // its API is set below
		checks = append(checks, tokens.ready)
	}
	apiCfg.Ready = readiness(checks...)
	if sweeper != nil {
		apiCfg.Retired = sweeper
		reg.MustRegister(metrics.Retention(sweeper))
		if sink := sweeper.Archive(); sink != nil {
			apiCfg.Archive = &server.Archive{Sink: sink, Store: store}
		}
	}
	if components, err = withDashboard(&apiCfg, components, index, store, views, auditLog, logger); err != nil {
		return nil, "", err
	}
	api := server.New(apiCfg)
	components = append(components, component{"sessions", api.Run})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "amends_token_changes_refused_total",
		Help: "Changes of the tokens file refused because they would leave the API no way to authenticate (the last good tokens are kept)."},
		func() float64 { return float64(api.RefusedTokenChanges()) }))
	if tokens != nil {
		tokens.api = api
		fileTokens := cfg.tokens[:len(cfg.tokens)-len(cfg.inlineTokens)]
		warnTokens(httpLog, cfg.tokensFile, fileTokens)
		components = append(components, component{"tokens", tokens.run})
	}
	l, err := net.Listen("tcp", cfg.http)
	if err != nil {
		return nil, "", fmt.Errorf("--http %s: %w", cfg.http, err)
	}
	hs := newHTTPServer(l, api.Handler(), httpOptions{maxConns: cfg.httpMaxConns, writeTimeout: httpWriteTimeout, tls: cfg.tls}, httpLog)
	url := hs.url
	if len(cfg.tokens) == 0 && cfg.oidc == nil {
		logger.Warn("the HTTP API has no tokens: anyone on this machine can read and steer records", "http", url)
	}
	components = append(components, component{"http", func(ctx context.Context) error {
		logger.Info("HTTP API serving", "url", url, "tokens", len(cfg.tokens), "oidc", cfg.oidc != nil, "tls", cfg.tls != nil,
			"max_connections", cfg.httpMaxConns, "allowed_hosts", strings.Join(append([]string{"IP addresses", "localhost"}, cfg.allowedHosts...), ","))
		return hs.run(ctx)
	}})
	return components, url, nil
}

// retryOpen opens something at start-up through transient errors (see
// transient.Retry), logging what it waits for; other errors return at once.
func retryOpen[T any](ctx context.Context, logger *slog.Logger, what string, open func(context.Context) (T, error)) (T, error) {
	var v T
	err := transient.Retry(ctx, logger, what, func(ctx context.Context) error {
		var err error
		v, err = open(ctx)
		return err
	})
	return v, err
}
