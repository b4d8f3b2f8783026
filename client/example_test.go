package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// List the records a prepare would accept now, one page at a time, and
// prepare each, recording why. (Compile-only: it needs amends serve.)
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", "operator-token", nil)
	if err != nil {
		log.Fatal(err)
	}
	q := api.Query{Filter: api.Filter{Processor: "Mailer", View: aggregate.ViewToRetry}, Limit: 100}
	for {
		page, err := c.List(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		for _, it := range page.Items {
			res, err := c.Prepare(ctx, it.ID, client.CommandOptions{Reason: "smtp is back"})
			if err != nil {
				log.Printf("%s: %v", it.ID, err) // a *client.Error says why
				continue
			}
			fmt.Println(it.ID, it.Aggregate.AggregateID, res.State.Status)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
}

// Force-prepare every FAILED Mailer record in one batch, paced by the
// server, with a line per record as it runs. (Compile-only.)
func ExampleClient_BatchForcePrepare() {
	c, err := client.New("http://127.0.0.1:8080", "operator-token", nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.BatchForcePrepare(context.Background(), api.BatchRequest{
		Filter:    api.Filter{Processor: "Mailer", Status: aggregate.StatusFailed},
		RequestID: "mailer-outage-2026-11-30", // sending it again returns this run's result
		Reason:    "smtp outage is over",
	}, client.BatchProgress{
		Outcome: func(o api.BatchOutcome) { fmt.Println(o.ID, o.Outcome, o.Message) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Counts)
}
