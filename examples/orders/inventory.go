package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/processor"
)

// Inventory is a projector: it keeps each order's stock reservation in a KV
// bucket, reserved on order_placed and released on order_cancelled. A put
// or delete of the order's key is idempotent, so redeliveries and replays
// are harmless.
type Inventory struct{ kv jetstream.KeyValue }

// NewInventory returns the projector on bucket kv.
func NewInventory(kv jetstream.KeyValue) *Inventory { return &Inventory{kv: kv} }

// Register adds the projector's functions to p.
func (inv *Inventory) Register(p *processor.Processor) error {
	if err := p.Register(processor.Function{Processor: "InventoryProjector", Name: "onPlaced",
		AggregateTypes: []string{AggregateType}, Events: []string{EventPlaced}},
		processor.HandleBody(inv.onPlaced)); err != nil {
		return err
	}
	return p.Register(processor.Function{Processor: "InventoryProjector", Name: "onCancelled",
		AggregateTypes: []string{AggregateType}, Events: []string{EventCancelled}},
		processor.HandleBody(inv.onCancelled))
}

func (inv *Inventory) onPlaced(ctx context.Context, d *processor.Delivery, p Placed) error {
	b, err := json.Marshal(p.Lines)
	if err != nil {
		return err
	}
	_, err = inv.kv.Put(ctx, key(d.Stream.Aggregate.ID), b)
	return err
}

func (inv *Inventory) onCancelled(ctx context.Context, d *processor.Delivery, _ Cancelled) error {
	err := inv.kv.Delete(ctx, key(d.Stream.Aggregate.ID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// Reserved returns the lines reserved for an order, nil if none.
func (inv *Inventory) Reserved(ctx context.Context, orderID string) ([]Line, error) {
	e, err := inv.kv.Get(ctx, key(orderID))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reservation of %s: %w", orderID, err)
	}
	var lines []Line
	return lines, json.Unmarshal(e.Value(), &lines)
}

// key is the reservation key; the example's order ids are plain tokens.
func key(orderID string) string { return "order." + orderID }
