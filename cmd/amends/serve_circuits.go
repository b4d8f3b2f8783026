package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/server"
)

// circuits is serve's part of the functions' circuits: the bucket the
// services' processors share them in, a watcher of it for the API, the
// dashboard and the metrics, and the recovery drains' progress.
type circuits struct {
	store   *circuit.Store
	watcher *circuit.Watcher
	drains  *circuit.Drains
}

// openCircuits opens the circuits and drains buckets, retrying through
// transient errors at start-up.
func openCircuits(ctx context.Context, cfg serveConfig, js jetstream.JetStream, quar *quarantine.Quarantine, startup, logger *slog.Logger) (*circuits, error) {
	store, err := retryOpen(ctx, startup, "the circuit bucket "+circuit.DefaultBucket, func(ctx context.Context) (*circuit.Store, error) {
		return circuit.OpenStore(ctx, js, circuit.WithReplicas(cfg.replicas), circuit.WithStorage(cfg.storage), circuit.WithQuarantine(quar))
	})
	if err != nil {
		return nil, fmt.Errorf("circuits: %w", err)
	}
	drains, err := retryOpen(ctx, startup, "the drain bucket "+circuit.DefaultDrainBucket, func(ctx context.Context) (*circuit.Drains, error) {
		return circuit.OpenDrains(ctx, js, "", cfg.replicas, circuit.WithDrainsQuarantine(quar))
	})
	if err != nil {
		return nil, fmt.Errorf("drains: %w", err)
	}
	return &circuits{store: store, watcher: store.Watcher("", logger.With("component", "circuits"), nil), drains: drains}, nil
}

// component runs the watcher.
func (c *circuits) component() component { return component{"circuits", c.watcher.Run} }

// schedulerOption runs the recovery drains, with the room in each
// context's replay consumer as their bound.
func (c *circuits) schedulerOption(js jetstream.JetStream, store *jsstore.Store, records scheduler.RecordLister, rate float64) scheduler.Option {
	return scheduler.WithDrains(scheduler.DrainConfig{Circuits: c.watcher, Store: c.store, Records: records, Progress: c.drains,
		Policy: scheduler.DrainPolicy{Rate: rate}, Capacity: scheduler.ReplayRoom(js, store.StreamName(aggregate.Context))})
}

// server is the API's part.
func (c *circuits) server() *server.Circuits {
	return &server.Circuits{Watcher: c.watcher, Store: c.store, Drains: c.drains}
}
