package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// Orders appends the order commands' events to the event store. It is
// deliberately small: one event per command, the state rebuilt from the
// history. Safe for concurrent use.
type Orders struct {
	store *jsstore.Store
}

// NewOrders returns Orders on store, whose clock (jsstore.WithClock) stamps
// the streams.
func NewOrders(store *jsstore.Store) *Orders {
	return &Orders{store: store}
}

// ErrInvalidState reports a command the order's state does not allow.
var ErrInvalidState = errors.New("orders: invalid state")

// Place places order id. Placing an existing order fails with
// eventstore.ErrConflict.
func (o *Orders) Place(ctx context.Context, id string, p Placed) (eventstore.Stream, error) {
	return o.append(ctx, id, 0, EventPlaced, p)
}

// Ship ships a placed order.
func (o *Orders) Ship(ctx context.Context, id, carrier string) (eventstore.Stream, error) {
	state, version, err := o.Get(ctx, id)
	if err != nil {
		return eventstore.Stream{}, err
	}
	if state.Status != StatusPlaced {
		return eventstore.Stream{}, fmt.Errorf("ship order %s: it is %s, not %s: %w", id, state.Status, StatusPlaced, ErrInvalidState)
	}
	return o.append(ctx, id, version, EventShipped, Shipped{Carrier: carrier})
}

// Get returns the order and its version, rebuilt from its history.
func (o *Orders) Get(ctx context.Context, id string) (Order, uint64, error) {
	a := aggregateID(id)
	streams, err := o.store.Load(ctx, a, 1)
	if err != nil {
		return Order{}, 0, err
	}
	state := Initial(a)
	for _, st := range streams {
		for i := range st.Events {
			if state, err = Evolve(state, &st.Events[i]); err != nil {
				return Order{}, 0, err
			}
		}
	}
	return state, uint64(len(streams)), nil
}

func (o *Orders) append(ctx context.Context, id string, version uint64, name string, body any) (eventstore.Stream, error) {
	return o.store.AppendEvents(ctx, aggregateID(id), version, eventstore.NewEvent{Name: name, Body: body})
}

func aggregateID(id string) eventstore.AggregateID {
	return eventstore.AggregateID{Context: Context, Type: AggregateType, ID: id}
}
