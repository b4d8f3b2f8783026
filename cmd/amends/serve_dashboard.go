package main

import (
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/dashboard"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/server"
)

// withDashboard mounts the dashboard on the API's config (at / next to
// /api/v1) and adds the component that keeps its live counts and backlog
// trend. The dashboard reads the serve's index, its event store (original
// event bodies, each read written to the audit log first) and watches the
// views bucket for changes.
func withDashboard(api *server.Config, components []component, index dashboard.Index, store *jsstore.Store, views jetstream.KeyValue, auditLog dashboard.Auditor, logger *slog.Logger) ([]component, error) {
	d, err := dashboard.New(dashboard.Config{Index: index, Events: store, Changes: views, Audit: auditLog, Logger: logger.With("component", "dashboard")})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	api.Dashboard = d
	return append(components, component{"dashboard", d.Run}), nil
}
