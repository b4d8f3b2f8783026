package scheduler_test

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// Every instance runs a scheduler on its own index; one of them prepares.
// (Compile-only: it needs a server.)
func Example() {
	var js jetstream.JetStream // connected to NATS with JetStream
	ctx := context.Background()
	store, _ := jsstore.New(js)
	views, _ := projection.OpenViews(ctx, js)
	index, _ := projection.NewIndex(views, store)
	go index.Run(ctx)
	leases, _ := scheduler.OpenLeases(ctx, js, scheduler.WithLeaseTTL(30*time.Second))
	s, _ := scheduler.New(index, aggregate.NewService(store), leases, scheduler.WithPeriod(time.Minute))
	_ = s.Run(ctx) // until ctx ends
}
