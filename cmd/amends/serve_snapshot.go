package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/projection"
)

// snapshotFlags configure the index's snapshots (projection.WithSnapshots)
// and its audit of the views against their histories (projection.WithAudit).
type snapshotFlags struct {
	every time.Duration
	audit int
}

func (f *snapshotFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&f.every, "index-snapshot-every", projection.DefaultSnapshotEvery,
		"how often the index saves a snapshot to start from (and at shutdown), 1s to 24h; 0 turns snapshots off (every start-up reads the whole views bucket)")
	fs.IntVar(&f.audit, "index-audit-rate", projection.DefaultAuditRate,
		fmt.Sprintf("how many records a second the index checks against their histories in the event store, projecting again a view that differs (two reads a record), 0 to %d; 0 turns the audit off", projection.MaxAuditRate))
}

// config validates the flag into cfg.
func (f *snapshotFlags) config(cfg *serveConfig) error {
	if err := checkRange("index-audit-rate", f.audit, 0, projection.MaxAuditRate, " records a second (0: off)"); err != nil {
		return err
	}
	cfg.indexAuditRate = f.audit
	if f.every == 0 {
		return nil
	}
	if err := checkRange("index-snapshot-every", f.every, projection.MinSnapshotEvery, projection.MaxSnapshotEvery, " (0: off)"); err != nil {
		return err
	}
	cfg.indexSnapshotEvery = f.every
	return nil
}

// snapshotOption opens the snapshot bucket when snapshots are on and
// returns the index's option for it (none when off).
func snapshotOption(ctx context.Context, cfg serveConfig, js jetstream.JetStream, logger *slog.Logger) ([]projection.IndexOption, error) {
	if cfg.indexSnapshotEvery == 0 {
		return nil, nil
	}
	snaps, err := retryOpen(ctx, logger, "the snapshot bucket "+projection.DefaultSnapshotBucket, func(ctx context.Context) (*projection.Snapshots, error) {
		return projection.OpenSnapshots(ctx, js, projection.WithSnapshotStorage(cfg.storage, cfg.replicas))
	})
	if err != nil {
		return nil, err
	}
	return []projection.IndexOption{projection.WithSnapshots(snaps, cfg.indexSnapshotEvery)}, nil
}
