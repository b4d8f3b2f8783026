package aggregate_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// A record's life: created on a failure, prepared when due, replayed with
// success. Decide and Evolve are pure; the time is an argument.
func ExampleDecide() {
	created := time.UnixMilli(1_735_000_000_000)
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 60, ExecutionTimeout: 30}
	s := aggregate.State{ID: aggregate.RecordID("evt-1", aggregate.FunctionInfo{ContextName: "order", ProcessorName: "Mailer", Name: "onOrderPlaced"})}
	run := func(c aggregate.Command, now time.Time) {
		events, err := aggregate.Decide(s, c, now)
		if err != nil {
			fmt.Printf("%s rejected: %v\n", c.CommandName(), err)
			return
		}
		s = aggregate.EvolveAll(s, events...)
		fmt.Printf("%s -> %s, retries %d, due %s\n", c.CommandName(), s.Status, s.RetryState.Retries,
			time.UnixMilli(s.RetryState.NextRetryAt).Sub(created))
	}

	run(aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateIDOf(eventstore.AggregateID{Context: "order", Type: "order", ID: "o-1"}), Version: 1},
		Function:  aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "onOrderPlaced"},
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"},
		ExecuteAt: created.UnixMilli(), RetrySpec: &spec, Recoverable: aggregate.Recoverable,
	}, created)
	fmt.Println("due after 59s:", s.Schedulable(created.Add(59*time.Second)), "after 60s:", s.Schedulable(created.Add(60*time.Second)))
	run(aggregate.PrepareCompensation{}, created.Add(60*time.Second))
	run(aggregate.PrepareCompensation{}, created.Add(61*time.Second))
	run(aggregate.ApplyExecutionSuccess{ExecuteAt: created.Add(62 * time.Second).UnixMilli(), Attempt: 1}, created.Add(62*time.Second))
	// Output:
	// create_execution_failed -> FAILED, retries 0, due 1m0s
	// due after 59s: false after 60s: true
	// prepare_compensation -> PREPARED, retries 1, due 3m0s
	// prepare_compensation rejected: ExecutionFailed can not retry.
	// apply_execution_success -> SUCCEEDED, retries 1, due 3m0s
}

// A record names the failed event's aggregate in Wow's wire shape; the
// event store and every Go API take eventstore.AggregateID. Convert, don't
// copy fields: the aggregate's own id is AggregateID there, ID here.
func ExampleWireAggregateID() {
	order := eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}
	wire := aggregate.WireAggregateIDOf(order)
	data, _ := json.Marshal(wire)
	fmt.Println(string(data))
	fmt.Println(wire.AggregateID, wire.StoreID() == order, wire.StoreID())
	// Output:
	// {"contextName":"shop","aggregateName":"order","aggregateId":"o-1","tenantId":"(0)"}
	// o-1 true shop.order/o-1
}
