package api_test

import (
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// A list query as the query string the server parses.
func ExampleQuery_Values() {
	q := api.Query{
		Filter: api.Filter{Processor: "Mailer", Status: aggregate.StatusFailed, View: aggregate.ViewToRetry,
			ExecuteAtFrom: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		Sort:  api.Sort{Field: api.SortNextRetryAt, Desc: true},
		Limit: 20,
	}
	fmt.Println(q.Values().Encode())
	// Output:
	// executeAtFrom=2026-11-30T08%3A00%3A00Z&limit=20&order=desc&processor=Mailer&sort=nextRetryAt&status=FAILED&view=to-retry
}
