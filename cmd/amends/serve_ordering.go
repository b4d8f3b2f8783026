package main

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/server"
)

// openOrdering opens the holds and range replay buckets the API serves.
func openOrdering(ctx context.Context, js jetstream.JetStream, store *jsstore.Store, svc *aggregate.Service, quar *quarantine.Quarantine, replicas int) (*server.Ordering, error) {
	holds, err := processor.OpenHolds(ctx, js, replicas, processor.WithHoldsQuarantine(quar))
	if err != nil {
		return nil, err
	}
	replays, err := processor.OpenReplays(ctx, js, replicas, processor.WithReplaysQuarantine(quar))
	if err != nil {
		return nil, err
	}
	return &server.Ordering{Holds: holds, Replays: replays, Records: svc, JS: js, Store: store}, nil
}
