package index_test

import (
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index"
)

// An index filled with two records answers from memory: a count of a
// view, a page in nextRetryAt order, and the records due.
func Example() {
	now := time.UnixMilli(1_735_000_000_000)
	ix, _ := index.New(index.WithClock(aggregate.ClockFunc(func() time.Time { return now })))
	for i, retries := range []int32{1, 3} {
		ix.Put(api.View{Version: 1, State: aggregate.State{
			ID:          fmt.Sprintf("rec-%d", i),
			EventID:     aggregate.EventID{ID: fmt.Sprintf("evt-%d", i), AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1"}},
			Function:    aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Invoicer", Name: "onOrder"},
			Error:       aggregate.ErrorDetails{ErrorCode: "Timeout"},
			ExecuteAt:   now.Add(-time.Hour).UnixMilli(),
			RetrySpec:   aggregate.RetrySpec{MaxRetries: 3},
			RetryState:  aggregate.RetryState{Retries: retries, TimeoutAt: now.Add(-time.Minute).UnixMilli(), NextRetryAt: now.Add(-time.Duration(i) * time.Minute).UnixMilli()},
			Status:      aggregate.StatusFailed,
			Recoverable: aggregate.Recoverable,
		}})
	}
	toRetry, _ := ix.Count(api.Filter{View: aggregate.ViewToRetry})
	fmt.Println("to retry:", toRetry)
	page, _ := ix.List(api.Query{Filter: api.Filter{Processor: "Invoicer"}, Sort: api.Sort{Field: api.SortNextRetryAt}})
	for _, it := range page.Items {
		fmt.Println(it.ID, it.Retries, "of", it.MaxRetries)
	}
	for _, d := range ix.Due(now, 10) {
		fmt.Println("due:", d.ID)
	}
	// Output:
	// to retry: 1
	// rec-1 3 of 3
	// rec-0 1 of 3
	// due: rec-0
}
