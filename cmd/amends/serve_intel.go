package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/scheduler"
)

// intel is serve's part of failure intelligence: the operators' rules,
// watched for the scheduler's park-until-deploy rules, the processors'
// build registry and the progress of park releases.
type intel struct {
	rules    *rules.Store
	watcher  *rules.Watcher
	builds   *processor.BuildRegistry
	releases *scheduler.ParkReleases
}

// openIntel opens the rules, builds and releases buckets, retrying through
// transient errors at start-up.
func openIntel(ctx context.Context, cfg serveConfig, js jetstream.JetStream, quar *quarantine.Quarantine, startup, logger *slog.Logger) (*intel, error) {
	st, err := retryOpen(ctx, startup, "the rules bucket "+rules.DefaultBucket, func(ctx context.Context) (*rules.Store, error) {
		return rules.OpenStore(ctx, js, rules.WithReplicas(cfg.replicas), rules.WithQuarantine(quar))
	})
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	builds, err := retryOpen(ctx, startup, "the build registry "+processor.DefaultBuildBucket, func(ctx context.Context) (*processor.BuildRegistry, error) {
		return processor.OpenBuildRegistry(ctx, js, "", 0, cfg.replicas, processor.WithRegistryQuarantine(quar))
	})
	if err != nil {
		return nil, fmt.Errorf("build registry: %w", err)
	}
	releases, err := retryOpen(ctx, startup, "the release bucket "+scheduler.DefaultParkReleaseBucket, func(ctx context.Context) (*scheduler.ParkReleases, error) {
		return scheduler.OpenParkReleases(ctx, js, "", cfg.replicas, scheduler.WithParkReleasesQuarantine(quar))
	})
	if err != nil {
		return nil, fmt.Errorf("releases: %w", err)
	}
	return &intel{rules: st, watcher: st.Watcher(0, logger.With("component", "rules")), builds: builds, releases: releases}, nil
}

// component runs the rules watcher.
func (in *intel) component() component { return component{"rules", in.watcher.Run} }

// schedulerOptions park records until a deploy and release them when a
// new build registers, with the default policy.
func (in *intel) schedulerOptions(records scheduler.RecordLister) []scheduler.Option {
	return []scheduler.Option{
		scheduler.WithParkRules(in.watcher),
		scheduler.WithParkRelease(in.builds, records, in.releases, scheduler.ParkReleasePolicy{}, nil),
	}
}
