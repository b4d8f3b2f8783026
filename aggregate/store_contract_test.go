package aggregate_test

import (
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// Every implementation of the store contract serves a Service.
var _ aggregate.Store = eventstore.Store[any](nil)
