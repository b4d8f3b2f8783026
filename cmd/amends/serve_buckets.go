package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// mismatches are the buckets serve found with other settings than it
// needs and uses as they are: logged once, and reported by /readyz until
// serve runs with --repair-buckets. Safe for concurrent use.
type mismatches struct {
	mu   sync.Mutex
	list []string
}

func (m *mismatches) add(logger *slog.Logger, what string, err error) {
	logger.Warn("a bucket has other settings than serve needs; it is used as it is until serve runs once with --repair-buckets", "bucket", what, "err", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.list, err.Error()) {
		m.list = append(m.list, err.Error())
	}
}

// check is /readyz's: not ready while a bucket's settings differ.
func (m *mismatches) check(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.list) == 0 {
		return nil
	}
	return fmt.Errorf("bucket settings differ from what serve needs (restart serve once with --repair-buckets): %s", strings.Join(m.list, "; "))
}

// repairBuckets brings the buckets whose settings serve matches (the
// views, the scheduler's lease, and with --partitions the plan's) to them, before anything opens them,
// and logs what it did.
func repairBuckets(ctx context.Context, cfg serveConfig, js jetstream.JetStream, logger *slog.Logger) error {
	log := func(bucket, action string, diffs []string) {
		if action != "none" {
			logger.Warn("--repair-buckets: bucket repaired", "bucket", bucket, "action", action, "differences", diffs)
		}
	}
	action, diffs, err := projection.RepairViews(ctx, js, false, projection.WithBucketReplicas(cfg.replicas), projection.WithBucketStorage(cfg.storage))
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("--repair-buckets: %s: %w", projection.DefaultBucket, err)
	}
	log(projection.DefaultBucket, action, diffs)
	if sc := cfg.scheduler; sc != nil {
		action, diffs, err := scheduler.RepairLeases(ctx, js, false, scheduler.WithLeaseTTL(sc.leaseTTL), scheduler.WithLeaseReplicas(cfg.replicas))
		if err != nil {
			return fmt.Errorf("--repair-buckets: %s: %w", scheduler.DefaultLeaseBucket, err)
		}
		log(scheduler.DefaultLeaseBucket, action, diffs)
	}
	if cfg.partitions != nil {
		action, diffs, err := scheduler.RepairPartitions(ctx, js, cfg.replicas, false)
		if err != nil {
			return fmt.Errorf("--repair-buckets: %s: %w", scheduler.DefaultPartitionsBucket, err)
		}
		log(scheduler.DefaultPartitionsBucket, action, diffs)
	}
	return nil
}
