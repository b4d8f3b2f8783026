package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/transient"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/fanout"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/scheduler"
)

// partitionFlags configure serve's partitioned mode (issue #42, see
// docs/scaling.md): the records split among the instances on one NATS
// cluster, each indexing and preparing those of the partitions it leases
// and answering queries for them, every query answered by any instance.
type partitionFlags struct {
	on       bool
	instance string
	timeout  time.Duration
}

func (f *partitionFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "partitions", false, "split the records among the serve instances on this NATS cluster: each indexes and prepares those of the partitions it leases, and any answers every query (see docs/scaling.md); needs --instance")
	fs.StringVar(&f.instance, "instance", "", "this instance's name with --partitions: unique among the instances, 1 to 64 of A-Z a-z 0-9 . _ -")
	fs.DurationVar(&f.timeout, "partitions-query-timeout", 5*time.Second, "with --partitions, how long a query waits for each instance's answer, 100ms to 1m")
}

// instanceName is the rule of --instance: a name that reads as itself in
// logs, leases and subjects.
var instanceName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// partitionsConfig is the validated partitioned mode.
type partitionsConfig struct {
	instance string
	timeout  time.Duration
}

// config validates the flags into cfg. Partitioned, the index keeps a
// snapshot per partition (--index-snapshot-every) and the scheduler is
// required (each instance prepares its partitions' due records).
func (f *partitionFlags) config(cfg *serveConfig, changed func(string) bool, scheduler bool) error {
	if !f.on {
		for _, name := range []string{"instance", "partitions-query-timeout"} {
			if changed(name) {
				return usageErrorf("--%s configures the partitioned mode: add --partitions, or drop it", name)
			}
		}
		return nil
	}
	switch {
	case f.instance == "":
		return usageErrorf("--partitions needs --instance: a name unique among the instances, 1 to 64 of A-Z a-z 0-9 . _ -")
	case !instanceName.MatchString(f.instance):
		return usageErrorf("--instance %.70q must be 1 to 64 of A-Z a-z 0-9 . _ -", f.instance)
	case !scheduler:
		return usageErrorf("--partitions needs the scheduler: each instance prepares the due records of its partitions; drop --scheduler=false")
	}
	if err := checkRange("partitions-query-timeout", f.timeout, 100*time.Millisecond, time.Minute, ""); err != nil {
		return err
	}
	cfg.partitions = &partitionsConfig{instance: f.instance, timeout: f.timeout}
	return nil
}

// openPartitions opens the plan's bucket and returns this instance's
// Partitions, whose sizes are those of *index once it is set. It first
// takes the instance's member lease, waiting within ctx while another
// process holds it: another instance with this name, or this one's last
// run, killed less than a lease TTL ago.
func openPartitions(ctx context.Context, cfg serveConfig, js jetstream.JetStream, leases *scheduler.Leases, index **projection.Index, startup, logger *slog.Logger) (*scheduler.Partitions, error) {
	plans, err := retryOpen(ctx, startup, "the partitions bucket "+scheduler.DefaultPartitionsBucket, func(ctx context.Context) (*kvstore.Store[partition.Plan], error) {
		return scheduler.OpenPartitions(ctx, js, cfg.replicas)
	})
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	parts, err := scheduler.NewPartitions(leases, plans, scheduler.PartitionsConfig{Instance: cfg.partitions.instance,
		Sizes: func() (map[string]uint64, map[string]uint64) { return (*index).Sizes() }, Logger: logger.With("component", "partitions")})
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	if err := join(ctx, parts, cfg.partitions.instance, leases.TTL(), startup); err != nil {
		return nil, err
	}
	return parts, nil
}

// join takes the member lease of instance through parts, waiting within
// ctx while another process holds it: a serve started again after a kill
// -9 waits for its last run's lease to expire; a second serve with the
// name fails at the end of its start-up.
func join(ctx context.Context, parts *scheduler.Partitions, instance string, ttl time.Duration, startup *slog.Logger) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for warned := false; ; warned = true {
		err := transient.Retry(ctx, startup, "the member lease of instance "+instance, parts.Join)
		if !errors.Is(err, scheduler.ErrInstanceTaken) {
			return err
		}
		if !warned {
			startup.Warn("another process holds this instance's name: another serve with this --instance, or this one's last run until its lease expires; waiting",
				"instance", instance, "lease_ttl", show(ttl))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("--instance %s: another process holds this instance's name (its member lease): another serve with this --instance, or this one's last run until its lease (TTL %s) expires", instance, show(ttl))
		case <-t.C:
		}
	}
}

// newPartitioned returns the reader of every instance's records through
// parts' plan, and the components of this instance: its leases and the
// responder of index.
func newPartitioned(cfg serveConfig, nc *nats.Conn, parts *scheduler.Partitions, index *projection.Index, views *projection.Views, logger *slog.Logger) (fanout.Strict, []component, error) {
	q, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: parts.Plan, Members: parts.Members, Processors: index.Processors, Timeout: cfg.partitions.timeout})
	if err != nil {
		return fanout.Strict{}, nil, err
	}
	r, err := fanout.NewResponder(nc, index, fanout.ResponderConfig{Instance: cfg.partitions.instance, Logger: logger.With("component", "responder")})
	if err != nil {
		return fanout.Strict{}, nil, err
	}
	strict := fanout.Strict{Querier: q, Timeout: 2 * cfg.partitions.timeout, Views: func(ctx context.Context, id string) (api.View, error) {
		return projection.GetView(ctx, views, id)
	}}
	return strict, []component{{"partitions", parts.Run}, {"responder", r.Run}}, nil
}

// spreadQueries answers the API and the dashboard across the instances:
// lists, counts, summaries and read-your-writes through every instance's
// index (fanout.Strict: in full, or an error naming the partitions
// missing), a record and its history from the views bucket and the event
// store, and the due records from this instance's index (its partitions').
type spreadQueries struct {
	fanout.Strict
	local *projection.Index
}

// spreadQueries answers the summary by fingerprint too (the server asks
// its Queries for it).
var _ interface {
	FingerprintSummary(api.Filter) ([]api.FingerprintGroup, error)
} = spreadQueries{}

// Get returns record id from the views bucket (as *projection.Index.Get).
func (q spreadQueries) Get(ctx context.Context, id string) (api.View, error) {
	return q.local.Get(ctx, id)
}

// History returns record id's history from the event store.
func (q spreadQueries) History(ctx context.Context, id string) ([]projection.Change, error) {
	return q.local.History(ctx, id)
}

// Due returns the due records of this instance's partitions.
func (q spreadQueries) Due(now time.Time, limit int) []index.Due { return q.local.Due(now, limit) }
