package projection_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
)

// Wiring the projection: a projector keeps the views bucket current, an
// index answers queries from memory. (Compile-only: it needs a server.)
func Example() {
	var js jetstream.JetStream // connected to NATS with JetStream
	ctx := context.Background()
	store, _ := jsstore.New(js)
	views, _ := projection.OpenViews(ctx, js, projection.WithBucketReplicas(3))
	projector, _ := projection.NewProjector(js, store, views)
	index, _ := projection.NewIndex(views, store)
	go projector.Run(ctx)
	go index.Run(ctx)
	<-index.Ready()

	page, _ := index.List(api.Query{
		Filter: api.Filter{View: aggregate.ViewToRetry, Processor: "OrderProjector"},
		Sort:   api.Sort{Field: api.SortNextRetryAt},
		Limit:  20,
	})
	for _, it := range page.Items {
		fmt.Println(it.ID, it.Status, it.Retries, it.MaxRetries)
	}
	due := index.Due(time.Now(), 100)
	fmt.Println(len(due), "records due")
}
