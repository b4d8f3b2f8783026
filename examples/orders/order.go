package orders

import (
	"encoding/json"
	"fmt"

	"github.com/amends-dev/amends/eventstore"
)

// Context is the bounded context of the example; AggregateType its only
// aggregate.
const (
	Context       = "orders"
	AggregateType = "order"
)

// Event names.
const (
	EventPlaced    = "order_placed"
	EventShipped   = "order_shipped"
	EventCancelled = "order_cancelled"
)

// Line is one ordered item.
type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Placed is the body of order_placed.
type Placed struct {
	Customer string `json:"customer"`
	Email    string `json:"email"`
	Lines    []Line `json:"lines"`
}

// Shipped is the body of order_shipped.
type Shipped struct {
	Carrier string `json:"carrier"`
}

// Cancelled is the body of order_cancelled.
type Cancelled struct {
	Reason string `json:"reason"`
}

// Status of an order.
const (
	StatusPlaced    = "PLACED"
	StatusShipped   = "SHIPPED"
	StatusCancelled = "CANCELLED"
)

// Order is the state of an order, built by Evolve.
type Order struct {
	ID       string `json:"id"`
	Customer string `json:"customer,omitempty"`
	Email    string `json:"email,omitempty"`
	Lines    []Line `json:"lines,omitempty"`
	Status   string `json:"status,omitempty"`
	Carrier  string `json:"carrier,omitempty"`
}

// Initial is the state before the first event.
func Initial(id eventstore.AggregateID) Order { return Order{ID: id.ID} }

// Evolve returns the order after event e. It does not change o's slices.
func Evolve(o Order, e *eventstore.Event) (Order, error) {
	switch e.Name {
	case EventPlaced:
		var b Placed
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return o, fmt.Errorf("%s: %w", e.Name, err)
		}
		o.Customer, o.Email, o.Lines, o.Status = b.Customer, b.Email, b.Lines, StatusPlaced
	case EventShipped:
		var b Shipped
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return o, fmt.Errorf("%s: %w", e.Name, err)
		}
		o.Status, o.Carrier = StatusShipped, b.Carrier
	case EventCancelled:
		o.Status = StatusCancelled
	}
	return o, nil
}
