package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/retention"
)

// retentionHelp explains the retention flags in serve's help.
const retentionHelp = `Retention: the active scheduler removes records that SUCCEEDED more than
--retention ago (default 30d; 0 keeps everything) from the compensation
stream, the views bucket and the index, --retention-batch at a time every
--retention-every, and, with --retention-unrecoverable, FAILED records
classified UNRECOVERABLE that long after their last failure. Removed
records stay counted per function and fingerprint (summary --by
fingerprint). With --archive dir:/path or --archive objectstore:BUCKET each
removed history is archived first (amends archive list|show|restore). A
compensation stream created before retention existed denies purges and
must be migrated first; see docs/retention.md.`

// retentionFlags are serve's retention flags.
type retentionFlags struct {
	succeeded, unrecoverable days
	batch                    int
	every                    time.Duration
	archive                  string
	migrate                  string
}

func (f *retentionFlags) add(fs *pflag.FlagSet, def time.Duration) {
	f.succeeded = days(def)
	fs.Var(&f.succeeded, "retention", "remove SUCCEEDED records this long after their success (30d, 720h; 0 keeps them), 1h to 3650d")
	fs.Var(&f.unrecoverable, "retention-unrecoverable", "remove FAILED records classified UNRECOVERABLE this long after their last failure (0, the default, keeps them), 1h to 3650d")
	fs.IntVar(&f.batch, "retention-batch", retention.DefaultBatch, "most records one retention pass removes, 1 to 10000")
	fs.DurationVar(&f.every, "retention-every", retention.DefaultEvery, "time between retention passes, 1s to 24h")
	fs.StringVar(&f.archive, "archive", "", "archive each removed record's history first: dir:/path or objectstore:BUCKET")
	fs.StringVar(&f.migrate, "migrate-stream", "", "at start, migrate a compensation stream that denies purges (created before retention) by snapshot and restore, keeping the snapshot in this directory; stop every other serve and processor first (see docs/retention.md)")
}

// retentionConfig is serve's validated retention.
type retentionConfig struct {
	succeeded, unrecoverable time.Duration
	batch                    int
	every                    time.Duration
	archive                  string // "" none
	migrate                  string // backup directory of --migrate-stream, "" none
}

func (c *retentionConfig) on() bool { return c != nil && (c.succeeded > 0 || c.unrecoverable > 0) }

// config validates the flags; every error names its flag.
func (f *retentionFlags) config() (*retentionConfig, error) {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"retention", time.Duration(f.succeeded)}, {"retention-unrecoverable", time.Duration(f.unrecoverable)}} {
		if d.v != 0 && (d.v < retention.MinRetention || d.v > retention.MaxRetention) {
			return nil, usageErrorf("--%s must be 0 (keep) or between 1h and 3650d, got %s", d.flag, days(d.v))
		}
	}
	if err := checkRange("retention-batch", f.batch, 1, retention.MaxBatch, ""); err != nil {
		return nil, err
	}
	if err := checkRange("retention-every", f.every, time.Second, 24*time.Hour, ""); err != nil {
		return nil, err
	}
	c := &retentionConfig{succeeded: time.Duration(f.succeeded), unrecoverable: time.Duration(f.unrecoverable), batch: f.batch, every: f.every, migrate: f.migrate}
	if f.migrate != "" && strings.ContainsRune(f.migrate, 0) {
		return nil, usageErrorf("--migrate-stream %q is not a directory path", clipText(f.migrate, 80))
	}
	if f.archive != "" {
		if err := checkArchiveSpec(f.archive); err != nil {
			return nil, usageErrorf("--archive: %v", err)
		}
		if !c.on() {
			return nil, usageErrorf("--archive needs --retention or --retention-unrecoverable: without retention nothing is archived")
		}
		c.archive = f.archive
	}
	return c, nil
}

// checkArchiveSpec checks the shape of an archive spec without opening it.
func checkArchiveSpec(spec string) error {
	kind, arg, ok := strings.Cut(spec, ":")
	switch {
	case len(spec) > archive.MaxSpecBytes:
		return fmt.Errorf("%d bytes, over the limit of %d", len(spec), archive.MaxSpecBytes)
	case !ok || (kind != "dir" && kind != "objectstore") || arg == "":
		return fmt.Errorf("%q must be dir:/path or objectstore:BUCKET", clipText(spec, 80))
	}
	return nil
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// openRetention opens the sweeper's bucket, its archive and the audit log,
// and returns the scheduler option that runs it; nil without retention.
func openRetention(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, views *projection.Views, records retention.Records,
	proj *projection.Projector, quar *quarantine.Quarantine, startup, logger *slog.Logger) (*retention.Sweeper, error) {
	rc := cfg.retention
	if !rc.on() {
		return nil, nil
	}
	progress, err := retryOpen(ctx, startup, "the retention bucket "+retention.DefaultBucket, func(ctx context.Context) (*retention.Store, error) {
		return retention.Open(ctx, js, "", cfg.replicas, retention.WithQuarantine(quar))
	})
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	auditLog, err := retryOpen(ctx, startup, "the audit stream "+audit.DefaultStream, func(ctx context.Context) (*audit.Log, error) {
		return audit.Open(ctx, js, audit.Config{Replicas: cfg.replicas, Storage: cfg.storage})
	})
	if err != nil {
		return nil, err
	}
	var sink archive.Sink
	if rc.archive != "" {
		sink, err = retryOpen(ctx, startup, "the archive "+rc.archive, func(ctx context.Context) (archive.Sink, error) {
			return archive.Open(ctx, js, rc.archive, cfg.replicas)
		})
		if err != nil {
			return nil, fmt.Errorf("--archive %s: %w", rc.archive, err)
		}
	}
	// Through retryOpen: a stream info asked while the stream's leader
	// steps down can go unanswered, and only an attempt's deadline ends it.
	removable, err := retryOpen(ctx, startup, "the compensation stream's purge setting", func(ctx context.Context) (bool, error) {
		return store.Removable(ctx, aggregate.Context)
	})
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	if !removable {
		logger.Warn("retention is on but the compensation stream denies purges (created before retention existed): nothing is removed until it is migrated; see docs/retention.md",
			"stream", store.StreamName(aggregate.Context))
	}
	return retention.New(retention.Config{
		Succeeded: rc.succeeded, Unrecoverable: rc.unrecoverable, Batch: rc.batch, Every: rc.every,
		Records: records, Store: store, Views: views, Progress: progress, Archive: sink, Audit: auditLog, Reprojector: proj,
		Logger: logger.With("component", "retention"),
	})
}

// days is a duration flag that also takes whole days ("30d").
type days time.Duration

func (d days) String() string {
	v := time.Duration(d)
	if v != 0 && v%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(v/(24*time.Hour)), 10) + "d"
	}
	return show(v)
}

func (d *days) Set(s string) error {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		v, err := strconv.ParseUint(n, 10, 32)
		if err != nil || v > 36500 {
			return fmt.Errorf("%q is not a whole number of days up to 36500", s)
		}
		*d = days(time.Duration(v) * 24 * time.Hour)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (30d, 720h, 0)", s)
	}
	*d = days(v)
	return nil
}

func (d *days) Type() string { return "duration" }

// migrateStream runs --migrate-stream: the compensation stream, if it
// exists and denies purges, is snapshotted, deleted and restored allowing
// them. Nothing else of serve has started yet.
func migrateStream(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, logger *slog.Logger) error {
	rc := cfg.retention
	if rc == nil || rc.migrate == "" {
		return nil
	}
	name := store.StreamName(aggregate.Context)
	if _, err := js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
		logger.Info("--migrate-stream: no compensation stream yet; it is created allowing purges", "stream", name)
		return nil
	}
	logger.Warn("--migrate-stream: migrating the compensation stream; nothing else may write to it meanwhile", "stream", name, "backup_dir", rc.migrate)
	m, err := store.MigrateRemovable(ctx, aggregate.Context, rc.migrate)
	if err != nil {
		return fmt.Errorf("--migrate-stream: %w", err)
	}
	if !m.Migrated {
		logger.Info("--migrate-stream: the compensation stream allows purges already; nothing to do", "stream", name)
		return nil
	}
	logger.Info("--migrate-stream: the compensation stream allows purges now", "stream", name, "messages", m.Messages, "last_seq", m.LastSeq,
		"snapshot", m.Backup, "snapshot_bytes", m.Bytes)
	return nil
}
