package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/dashboard"
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
	leases, err := openLeases(ctx, cfg, js, mismatch, startup)
	if err != nil {
		return nil, "", err
	}
	rm, err := openReadModel(ctx, cfg, nc, js, store, leases, mismatch, startup, logger)
	if err != nil {
		return nil, "", err
	}
	views, quar, proj, index, sightings := rm.views, rm.quar, rm.proj, rm.index, rm.sightings
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
	reg.MustRegister(collectors.NewGoCollector(liveHeap), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.Records(index), metrics.Projector(proj), metrics.Quarantine(quar),
		metrics.Failures(index, nil))
	components := append([]component{{"projector", proj.Run}, {"index", index.Run}}, rm.components...)
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
	if cfg.scheduler != nil {
		var sched *scheduler.Scheduler
		sched, sweeper, err = openScheduler(ctx, cfg, js, store, svc, leases, rm, in, circ, startup, logger)
		if err != nil {
			return nil, "", err
		}
		reg.MustRegister(metrics.Scheduler(sched, index))
		components = append(components, component{"scheduler", sched.Run})
	}

	notifier, err := notifierComponents(cfg, js, store, svc, quar, reg, logger)
	if err != nil {
		return nil, "", fmt.Errorf("notifier: %w", err)
	}
	components = append(components, notifier...)

	ordering, sessions, auditLog, err := openOperatorStores(ctx, cfg, js, store, svc, quar, startup)
	if err != nil {
		return nil, "", err
	}
	sightings.log.Store(auditLog)
	httpLog := logger.With("component", "http")
	apiCfg := server.Config{
		Queries: rm.queries, Commands: svc, Batches: batches, Tokens: cfg.tokens, Registry: reg, Quarantine: quar, Ordering: ordering, Rules: in.rules,
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
	serveRetired(&apiCfg, reg, sweeper, store)
	if components, err = withDashboard(&apiCfg, components, rm.queries, store, views, auditLog, logger); err != nil {
		return nil, "", err
	}
	api := server.New(apiCfg)
	components = append(components, component{"sessions", api.Run})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "amends_token_changes_refused_total",
		Help: "Changes of the tokens file refused because they would leave the API no way to authenticate (the last good tokens are kept)."},
		func() float64 { return float64(api.RefusedTokenChanges()) }))
	if tokens != nil {
		components = append(components, tokens.component(cfg, api, httpLog))
	}
	url, run, err := listenHTTP(cfg, api, httpLog, logger)
	if err != nil {
		return nil, "", err
	}
	components = append(components, component{"http", run})
	return components, url, nil
}

// liveHeap adds go_gc_heap_live_bytes to the Go collector's metrics: the
// heap the last GC found live, the memory the index and the rest hold
// (the heap metrics of memstats include garbage not yet collected).
var liveHeap = collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})

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

// readModel is what serve reads records through: the views bucket, the
// quarantine, the projector and the index over them.
type readModel struct {
	views     *projection.Views
	quar      *quarantine.Quarantine
	proj      *projection.Projector
	index     *projection.Index
	sightings *unauditedSightings
	// queries answer the API and the dashboard, records the scheduler's
	// drains, releases and retention: the index, or with --partitions
	// every instance's (spreadQueries, fanout.Strict).
	queries readQueries
	records scheduler.RecordLister
	// parts are this instance's partitions with --partitions, and
	// components what runs them and answers for its index.
	parts      *scheduler.Partitions
	components []component
}

// readQueries is what the API and the dashboard read records through.
type readQueries interface {
	server.Queries
	dashboard.Index
}

// openReadModel opens the views bucket (an incompatible one is used as it is and
// reported), the quarantine, the projector and the index.
func openReadModel(ctx context.Context, cfg serveConfig, nc *nats.Conn, js jetstream.JetStream, store *jsstore.Store, leases *scheduler.Leases, mismatch *mismatches,
	startup, logger *slog.Logger) (*readModel, error) {
	views, err := retryOpen(ctx, startup, "the views bucket "+projection.DefaultBucket, func(ctx context.Context) (*projection.Views, error) {
		views, err := projection.OpenViews(ctx, js, append(viewsCompression(cfg), projection.WithBucketReplicas(cfg.replicas), projection.WithBucketStorage(cfg.storage))...)
		if errors.Is(err, projection.ErrIncompatibleBucket) {
			// Used as it is (projected views work on any settings),
			// reported by /readyz until repaired.
			mismatch.add(startup, "views", err)
			kv, err := js.KeyValue(ctx, projection.DefaultBucket)
			if err != nil {
				return nil, err
			}
			return projection.NewViews(js, kv)
		}
		return views, err
	})
	if err != nil {
		return nil, fmt.Errorf("projection: %w", err)
	}
	sightings := &unauditedSightings{logger: logger.With("component", "audit")}
	quar, err := quarantine.New(js, quarantine.WithReplicas(cfg.replicas), quarantine.WithStorage(cfg.storage), quarantine.WithLogger(logger.With("component", "quarantine"), 0),
		quarantine.WithUnaudited(sightings.record))
	if err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	proj, err := projection.NewProjector(js, store, views, projection.WithLogger(logger.With("component", "projector")), projection.WithQuarantine(quar))
	if err != nil {
		return nil, err
	}
	snap, err := snapshotOption(ctx, cfg, js, startup)
	if err != nil {
		return nil, fmt.Errorf("index snapshots: %w", err)
	}
	opts := append([]projection.IndexOption{projection.WithReprojector(proj), projection.WithIndexQuarantine(quar),
		projection.WithAudit(cfg.indexAuditRate), projection.WithIndexLogger(logger.With("component", "index"))}, snap...)
	var index *projection.Index
	var parts *scheduler.Partitions
	if cfg.partitions != nil {
		if parts, err = openPartitions(ctx, cfg, js, leases, &index, startup, logger); err != nil {
			return nil, err
		}
		opts = append(opts, projection.WithPartitions(parts))
	}
	if index, err = projection.NewIndex(views, store, opts...); err != nil {
		return nil, err
	}
	rm := &readModel{views: views, quar: quar, proj: proj, index: index, sightings: sightings, queries: index, records: index}
	if parts != nil {
		strict, components, err := newPartitioned(cfg, nc, parts, index, views, logger)
		if err != nil {
			return nil, err
		}
		rm.parts, rm.components = parts, components
		rm.queries, rm.records = spreadQueries{Strict: strict, local: index}, strict
	}
	return rm, nil
}

// openLeases repairs the buckets first if asked (--repair-buckets: before
// any bucket is opened, so that none is found mismatched), then opens the
// lease bucket of the scheduler and the partitions, nil without the
// scheduler. An incompatible bucket is bound with its own TTL and
// reported.
func openLeases(ctx context.Context, cfg serveConfig, js jetstream.JetStream, mismatch *mismatches, startup *slog.Logger) (*scheduler.Leases, error) {
	if cfg.repairBuckets {
		if err := repairBuckets(ctx, cfg, js, startup); err != nil {
			return nil, err
		}
	}
	sc := cfg.scheduler
	if sc == nil {
		return nil, nil
	}
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
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return leases, nil
}

// openScheduler returns the scheduler of cfg.scheduler on leases, with
// the retention sweeper it runs, nil when retention is off. With
// --partitions it prepares the due records of this instance's partitions.
func openScheduler(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, svc *aggregate.Service, leases *scheduler.Leases, rm *readModel,
	in *intel, circ *circuits, startup, logger *slog.Logger) (*scheduler.Scheduler, *retention.Sweeper, error) {
	sc := cfg.scheduler
	sopts := append(in.schedulerOptions(rm.records), circ.schedulerOption(js, store, rm.records, sc.drainRate))
	if rm.parts != nil {
		sopts = append(sopts, scheduler.WithPartitions(rm.parts), scheduler.WithInstance(cfg.partitions.instance))
	}
	sweeper, err := openRetention(ctx, cfg, js, store, rm.views, rm.records, rm.proj, rm.quar, startup, logger)
	if err != nil {
		return nil, nil, err
	}
	if sweeper != nil {
		sopts = append(sopts, scheduler.WithRetention(sweeper))
	}
	sched, err := scheduler.New(rm.index, svc, leases, append([]scheduler.Option{
		scheduler.WithPeriod(sc.period), scheduler.WithInitialDelay(sc.delay), scheduler.WithBatch(sc.batch),
		scheduler.WithRate(sc.rate), scheduler.WithConcurrency(sc.workers), scheduler.WithLogger(logger.With("component", "scheduler")), scheduler.WithReprojector(rm.proj)},
		sopts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler: %w", err)
	}
	return sched, sweeper, nil
}

// listenHTTP listens on cfg.http and returns the API's URL and the
// component that serves it.
func listenHTTP(cfg serveConfig, api *server.Server, httpLog, logger *slog.Logger) (string, func(context.Context) error, error) {
	l, err := net.Listen("tcp", cfg.http)
	if err != nil {
		return "", nil, fmt.Errorf("--http %s: %w", cfg.http, err)
	}
	hs := newHTTPServer(l, api.Handler(), httpOptions{maxConns: cfg.httpMaxConns, writeTimeout: httpWriteTimeout, tls: cfg.tls}, httpLog)
	url := hs.url
	if len(cfg.tokens) == 0 && cfg.oidc == nil {
		logger.Warn("the HTTP API has no tokens: anyone on this machine can read and steer records", "http", url)
	}
	return url, func(ctx context.Context) error {
		logger.Info("HTTP API serving", "url", url, "tokens", len(cfg.tokens), "oidc", cfg.oidc != nil, "tls", cfg.tls != nil,
			"max_connections", cfg.httpMaxConns, "allowed_hosts", strings.Join(append([]string{"IP addresses", "localhost"}, cfg.allowedHosts...), ","))
		return hs.run(ctx)
	}, nil
}

// openOperatorStores opens what the operator's API keeps besides records:
// the holds and replays buckets, the sessions and the audit log.
func openOperatorStores(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, svc *aggregate.Service, quar *quarantine.Quarantine,
	startup *slog.Logger) (*server.Ordering, jetstream.KeyValue, *audit.Log, error) {
	ordering, err := retryOpen(ctx, startup, "the holds and replays buckets", func(ctx context.Context) (*server.Ordering, error) {
		return openOrdering(ctx, js, store, svc, quar, cfg.replicas)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	sessions, err := retryOpen(ctx, startup, "the session bucket "+server.DefaultSessionBucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return server.OpenSessions(ctx, js, cfg.replicas)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	auditLog, err := retryOpen(ctx, startup, "the audit stream "+audit.DefaultStream, func(ctx context.Context) (*audit.Log, error) {
		return audit.Open(ctx, js, audit.Config{Replicas: cfg.replicas, Storage: cfg.storage})
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return ordering, sessions, auditLog, nil
}

// serveRetired gives the API the sweeper's tallies and archive, and
// registers its metrics; a nil sweeper (retention off) adds nothing.
func serveRetired(apiCfg *server.Config, reg *prometheus.Registry, sweeper *retention.Sweeper, store *jsstore.Store) {
	if sweeper == nil {
		return
	}
	apiCfg.Retired = sweeper
	reg.MustRegister(metrics.Retention(sweeper))
	if sink := sweeper.Archive(); sink != nil {
		apiCfg.Archive = &server.Archive{Sink: sink, Store: store}
	}
}

// component is the reloader's component, reloading the tokens file for
// api; it warns of the file's tokens that are weak or expire soon.
func (t *tokenReloader) component(cfg serveConfig, api *server.Server, httpLog *slog.Logger) component {
	t.api = api
	fileTokens := cfg.tokens[:len(cfg.tokens)-len(cfg.inlineTokens)]
	warnTokens(httpLog, cfg.tokensFile, fileTokens)
	return component{"tokens", t.run}
}
