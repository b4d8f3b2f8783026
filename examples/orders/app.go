package orders

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

var registerCodes sync.Once

// App is the wired example service.
type App struct {
	Orders    *Orders
	Inventory *Inventory
	Mailer    *Mailer
	// Processor runs the functions; Run it.
	Processor *processor.Processor
	// Records executes commands on ExecutionFailed records (what the
	// scheduler and operators do through the control plane).
	Records *aggregate.Service
	// Recorder records failures.
	Recorder *recorder.Recorder
	// Snapshots holds the latest state of each order.
	Snapshots jetstream.KeyValue
}

// Config carries what New needs besides the JetStream connection.
type Config struct {
	Mail MailServer
	// MailRetrySpec is the mailer's retry spec; nil means MailRetrySpec.
	MailRetrySpec   *aggregate.RetrySpec
	Clock           aggregate.Clock
	ProcessorOpts   []processor.Option
	RecorderOptions []recorder.Option
	// TracerProvider receives the processor's spans (see Tracing); nil
	// means the global provider.
	TracerProvider trace.TracerProvider
}

// New wires the example service on js: the event store, the inventory and
// snapshot buckets, the record service, the recorder and the processor with
// the inventory projector, the mailer and the order snapshot.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*App, error) {
	registerCodes.Do(func() {
		// Stable error codes for the mail server's rejections, so records
		// and summaries group them by name.
		_ = recorder.RegisterCode(ErrGreylisted, "Greylisted")
		_ = recorder.RegisterCode(ErrMailboxFull, "MailboxFull")
	})
	store, err := jsstore.New(js, jsstore.WithClock(cfg.Clock.Now))
	if err != nil {
		return nil, err
	}
	if err := store.Provision(ctx, Context, aggregate.Context); err != nil {
		return nil, err
	}
	inventoryKV, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "orders_inventory"})
	if err != nil {
		return nil, fmt.Errorf("inventory bucket: %w", err)
	}
	snapshots, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "orders_snapshots"})
	if err != nil {
		return nil, fmt.Errorf("snapshot bucket: %w", err)
	}
	records := aggregate.NewService(store, aggregate.WithClock(cfg.Clock))
	rec, err := recorder.New(records, append([]recorder.Option{recorder.WithClock(cfg.Clock)}, cfg.RecorderOptions...)...)
	if err != nil {
		return nil, err
	}
	opts := []processor.Option{processor.WithRecorder(rec), processor.WithRecords(records), processor.WithClock(cfg.Clock)}
	if cfg.TracerProvider != nil {
		opts = append(opts, processor.WithTracerProvider(cfg.TracerProvider))
	}
	opts = append(opts, cfg.ProcessorOpts...)
	p, err := processor.New(js, store, Context, opts...)
	if err != nil {
		return nil, err
	}
	app := &App{
		Orders: NewOrders(store), Inventory: NewInventory(inventoryKV), Mailer: NewMailer(cfg.Mail, cfg.mailSpec()),
		Processor: p, Records: records, Recorder: rec, Snapshots: snapshots,
	}
	if err := p.RegisterAggregate(AggregateType, processor.Evolve(Initial, Evolve, EventPlaced, EventShipped, EventCancelled)); err != nil {
		return nil, err
	}
	for _, register := range []func(*processor.Processor) error{app.Inventory.Register, app.Mailer.Register} {
		if err := register(p); err != nil {
			return nil, err
		}
	}
	if err := p.Snapshot(AggregateType, snapshots); err != nil {
		return nil, err
	}
	return app, nil
}

func (c Config) mailSpec() aggregate.RetrySpec {
	if c.MailRetrySpec != nil {
		return *c.MailRetrySpec
	}
	return MailRetrySpec
}
