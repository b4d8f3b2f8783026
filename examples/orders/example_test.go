package orders_test

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/examples/orders"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// The wiring by hand, part by part, as amends.New does it (the README shows
// examples/billing, which uses amends.New), kept compiling here.

func wire(js jetstream.JetStream) (*processor.Processor, error) {
	store, err := jsstore.New(js)
	if err != nil {
		return nil, err
	}
	records := aggregate.NewService(store)
	rec, err := recorder.New(records)
	if err != nil {
		return nil, err
	}
	return processor.New(js, store, "orders", processor.WithRecorder(rec), processor.WithRecords(records))
}

func register(p *processor.Processor, confirm func(context.Context, *processor.Delivery, orders.Placed) error) error {
	return p.Register(processor.Function{Processor: "Mailer", Name: "confirmOrder",
		AggregateTypes: []string{"order"}, Events: []string{"order_placed"}},
		processor.HandleBody(confirm),
		processor.RetrySpec(aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}),
		processor.UnrecoverableOn(failure.Is(orders.ErrMailboxFull)))
}

// Example_embedding wires a processor as the README shows. It needs a NATS
// server, so it only compiles; TestWalkthrough runs the real thing.
func Example_embedding() {
	var js jetstream.JetStream // connected to NATS with JetStream
	p, err := wire(js)
	if err != nil {
		panic(err)
	}
	confirm := func(ctx context.Context, d *processor.Delivery, placed orders.Placed) error { return nil }
	if err := register(p, confirm); err != nil {
		panic(err)
	}
	go func() { _ = p.Run(context.Background()) }()
}
