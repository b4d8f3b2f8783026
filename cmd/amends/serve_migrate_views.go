package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/projection"
)

// migrateFlags are serve's --migrate-views and --dry-run: the views
// projected into the views bucket keyed by processor (issue #42) from the
// event store, ahead of an upgrade, while the instances of the earlier
// version still serve from theirs.
type migrateFlags struct {
	views  bool
	dryRun bool
}

func (f *migrateFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&f.views, "migrate-views", false, "project the views bucket "+projection.DefaultBucket+" from the event store, wait until it holds every record, and exit (resumable, idempotent; with --dry-run it only says what it would do); see docs/scaling.md")
	fs.BoolVar(&f.dryRun, "dry-run", false, "with --migrate-views: say what the migration would do and change nothing")
}

// config validates the flags into cfg.
func (f *migrateFlags) config(cfg *serveConfig) error {
	if f.dryRun && !f.views {
		return usageErrorf("--dry-run only applies to --migrate-views: add --migrate-views, or drop --dry-run")
	}
	cfg.migrateViews, cfg.migrateDryRun = f.views, f.dryRun
	return nil
}

// migrationProgress is how often --migrate-views logs its progress.
const migrationProgress = 5 * time.Second

// migrationState is what --migrate-views finds before it acts.
type migrationState struct {
	messages, lastSeq uint64 // of the compensation stream
	views             int64  // in the new bucket, -1: no bucket yet
	legacy            int64  // in the legacy bucket, -1: none
	pending           int64  // of the projector's durable, -1: none yet
}

// migrateViews runs serve --migrate-views: it projects the views bucket
// from the compensation stream with the projector's own durable consumer,
// until the consumer has nothing pending, and returns; serve then exits.
// It is resumable (the durable keeps its place, so a second run goes on
// where the first stopped) and idempotent (a view already at a stream's
// version is left as it is). The legacy bucket is neither read nor
// changed. With dryRun it only logs what it finds and would do.
func migrateViews(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, logger *slog.Logger) error {
	st, err := readMigration(ctx, js, store)
	if err != nil {
		return fmt.Errorf("--migrate-views: %w", err)
	}
	logger.Info("--migrate-views: found", "stream", store.StreamName(aggregate.Context), "messages", st.messages, "last_seq", st.lastSeq,
		"bucket", projection.DefaultBucket, "bucket_views", st.views, "durable", projection.DefaultDurable, "durable_pending", st.pending,
		"legacy_bucket", projection.LegacyBucket, "legacy_views", st.legacy)
	if cfg.migrateDryRun {
		todo := "projects every message of the stream into the bucket (the durable does not exist yet)"
		switch {
		case st.pending == 0:
			todo = "nothing: the durable has projected every message"
		case st.pending > 0:
			todo = fmt.Sprintf("projects the %d messages the durable has not projected yet", st.pending)
		}
		logger.Info("--migrate-views --dry-run: nothing changed; the migration would create what is missing and then do this", "would", todo,
			"legacy", "left as it is; delete it once no instance of an earlier version runs")
		return nil
	}
	return runMigration(ctx, cfg, js, store, st, logger)
}

// runMigration projects until the projector's durable has nothing pending.
func runMigration(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, st migrationState, logger *slog.Logger) error {
	views, err := projection.OpenViews(ctx, js, append(viewsCompression(cfg), projection.WithBucketReplicas(cfg.replicas), projection.WithBucketStorage(cfg.storage))...)
	if err != nil {
		return fmt.Errorf("--migrate-views: open the views bucket: %w", err)
	}
	proj, err := projection.NewProjector(js, store, views, projection.WithLogger(logger.With("component", "projector")))
	if err != nil {
		return fmt.Errorf("--migrate-views: %w", err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- proj.Run(pctx) }()
	defer func() { stop(); <-done }()
	began, last := time.Now(), time.Now()
	for {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("--migrate-views: the projector stopped: %w", err)
		default:
		}
		info, err := durableInfo(ctx, js, store) // not there yet, or not read: asked again
		if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
			break
		}
		if err == nil && time.Since(last) >= migrationProgress {
			last = time.Now()
			logger.Info("--migrate-views: projecting", "pending", info.NumPending, "in_flight", info.NumAckPending, "at", info.AckFloor.Stream, "of", st.lastSeq)
		}
		if err := wait.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("--migrate-views: stopped before it ended; run it again to go on: %w", err)
		}
	}
	stats := proj.Stats()
	logger.Info("--migrate-views: the views bucket holds every record; serve can start without it", "bucket", projection.DefaultBucket,
		"took", time.Since(began).Round(time.Millisecond), "projected", stats.Projected, "rebuilt", stats.Rebuilt, "skipped", stats.Skipped,
		"quarantined", stats.Corrupt, "legacy_bucket", projection.LegacyBucket)
	return nil
}

// durableInfo reads the projector's durable consumer; one that does not
// exist is an error matching jetstream.ErrConsumerNotFound.
func durableInfo(ctx context.Context, js jetstream.JetStream, store *jsstore.Store) (*jetstream.ConsumerInfo, error) {
	c, err := js.Consumer(ctx, store.StreamName(aggregate.Context), projection.DefaultDurable)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

// readMigration reads what --migrate-views starts from; it changes nothing.
func readMigration(ctx context.Context, js jetstream.JetStream, store *jsstore.Store) (migrationState, error) {
	st := migrationState{views: -1, legacy: -1, pending: -1}
	name := store.StreamName(aggregate.Context)
	s, err := js.Stream(ctx, name)
	if err != nil {
		return st, fmt.Errorf("read the compensation stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("read the compensation stream %s: %w", name, err)
	}
	st.messages, st.lastSeq = info.State.Msgs, info.State.LastSeq
	if st.views, err = bucketValues(ctx, js, projection.DefaultBucket); err != nil {
		return st, err
	}
	if st.legacy, err = bucketValues(ctx, js, projection.LegacyBucket); err != nil {
		return st, err
	}
	ci, err := durableInfo(ctx, js, store)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return st, fmt.Errorf("read the projector's durable %s: %w", projection.DefaultDurable, err)
	default:
		st.pending = int64(ci.NumPending) + int64(ci.NumAckPending)
	}
	return st, nil
}

// bucketValues returns how many values (messages) bucket's stream holds,
// -1 if there is no such bucket.
func bucketValues(ctx context.Context, js jetstream.JetStream, bucket string) (int64, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read bucket %s: %w", bucket, err)
	}
	status, err := kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("read bucket %s: %w", bucket, err)
	}
	return int64(status.Values()), nil
}

// warnLegacyViews says, at start, that the legacy views bucket is no
// longer read, if it exists.
func warnLegacyViews(ctx context.Context, js jetstream.JetStream, logger *slog.Logger) {
	if n, err := bucketValues(ctx, js, projection.LegacyBucket); err == nil && n >= 0 {
		logger.Warn("the views bucket of an earlier version is no longer read: the views are projected into the bucket keyed by processor from the event store (serve --migrate-views does it ahead of an upgrade); delete the old bucket once no instance of an earlier version runs",
			"legacy_bucket", projection.LegacyBucket, "legacy_views", n, "bucket", projection.DefaultBucket)
	}
}
