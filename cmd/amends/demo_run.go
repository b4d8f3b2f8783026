package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/examples/orders"
	"github.com/amends-dev/amends/processor"
)

// demo is the example service and the watcher that tells its story.
type demo struct {
	a   *app
	f   *demoFlags
	js  jetstream.JetStream
	api string
	// token authenticates the demo's reads of the API (none if empty).
	token string
	// natsURL is the NATS server the example service uses, for natscli.
	natsURL string
	// pageLimit is the page size of the demo's reads (0: the server's
	// default).
	pageLimit int
}

// demoFailures is how many sends of each mail fail: the first call and its
// immediate retry, then the first replay and its immediate retry. The
// second replay succeeds.
const demoFailures = 4

// demoSpec is the mailer's retry spec in the demo: seconds, not minutes.
var demoSpec = aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 1, ExecutionTimeout: 10}

func (d *demo) run(ctx context.Context) error {
	mail := orders.NewFlakyServer()
	mail.FailFirst(demoFailures, orders.ErrGreylisted)
	spec := demoSpec
	svc, err := orders.New(ctx, d.js, orders.Config{
		Mail: mail, Clock: aggregate.ClockFunc(time.Now), MailRetrySpec: &spec,
		ProcessorOpts: []processor.Option{
			// The demo's mail server refuses the first sends of every mail,
			// as greylisting does: a circuit would take that for an outage
			// and stop the replays the demo shows (amends bench storm shows
			// the circuits).
			processor.WithCircuitPolicy(circuit.Policy{Off: true}),
			processor.WithImmediateRetry(processor.Retry{Retries: 1, Backoff: processor.Backoff{Min: 200 * time.Millisecond}}),
			processor.WithDeliverNew(),
			// The story goes to stdout; the processor's warnings about the
			// failures it records would repeat it.
			processor.WithLogger(slog.New(levelHandler{slog.LevelError, d.a.logger.Handler()})),
		},
	})
	if err != nil {
		return fmt.Errorf("example service: %w", err)
	}
	pctx, stop := context.WithCancel(ctx)
	if err := svc.Processor.Start(pctx); err != nil {
		stop()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("example service stopped: %w", err)
	}
	defer func() { stop(); _ = svc.Processor.Wait() }()

	c, err := client.New(d.api, d.token, nil)
	if err != nil {
		return err
	}
	printDemoIntro(d.a, d.api, d.natsURL, d.f.orders)
	run := uuid.NewString()[:8]
	for i := range d.f.orders {
		id := fmt.Sprintf("demo-%s-%d", run, i+1)
		placed := orders.Placed{Customer: "Ada", Email: "ada@example.com", Lines: []orders.Line{{SKU: "BOOK-42", Qty: i + 1}}}
		if _, err := svc.Orders.Place(ctx, id, placed); err != nil {
			return fmt.Errorf("place order %s: %w", id, err)
		}
		fmt.Fprintf(d.a.stdout, "placed order %s\n", id)
	}
	ids, err := d.watch(ctx, c, run)
	if err != nil {
		return err
	}
	ok := len(ids) == d.f.orders
	if ok {
		fmt.Fprintf(d.a.stdout, `
every record SUCCEEDED: the mail server took %d sends for %d mails, and only the
mailer was replayed: the inventory projector ran once per order (%d calls).
`, mail.Tries(), d.f.orders, svc.Processor.FunctionMetrics("InventoryProjector", "onPlaced").Calls.Load())
		fmt.Fprintf(d.a.stdout, `
look at the records (commands take record ids, not order ids):
  go run ./cmd/amends list --view succeeded%[1]s
  go run ./cmd/amends history %[2]s%[1]s
  go run ./cmd/amends summary%[1]s
`, serverFlag(d.api), ids[0])
	}
	if d.f.exit {
		if !ok {
			return fmt.Errorf("the records did not all succeed within %s", d.f.timeout)
		}
		return errFinished
	}
	fmt.Fprintln(d.a.stdout, "\nCtrl-C to stop.")
	<-ctx.Done()
	return nil
}

// watch prints every change of the demo's records until all succeeded, and
// returns their record ids in the order of the orders (fewer if ctx ended
// or --exit's timeout passed first). It prints a failed read to stderr once
// per distinct error and goes on; it returns an error if the API refuses
// the demo's credentials, since waiting cannot help then.
func (d *demo) watch(ctx context.Context, c *client.Client, run string) ([]string, error) {
	if d.f.exit {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.f.timeout)
		defer cancel()
	}
	seen := map[string]uint64{}
	var lastErr string
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		items, err := d.list(ctx, c)
		switch {
		case err == nil:
			lastErr = ""
			var done []api.Item
			for _, it := range items {
				if !d.mine(it, run) {
					continue
				}
				if seen[it.ID] != it.Version {
					seen[it.ID] = it.Version
					d.printStep(it)
				}
				if it.Status == aggregate.StatusSucceeded {
					done = append(done, it)
				}
			}
			if len(done) == d.f.orders {
				slices.SortFunc(done, func(a, b api.Item) int {
					return strings.Compare(a.Aggregate.AggregateID, b.Aggregate.AggregateID)
				})
				ids := make([]string, len(done))
				for i, it := range done {
					ids[i] = it.ID
				}
				return ids, nil
			}
		case ctx.Err() != nil:
		default:
			var ae *client.Error
			if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
				return nil, fmt.Errorf("the API at %s refused to list the records (%d %s): %w; give a viewer token with --token or AMENDS_TOKEN",
					d.api, ae.Status, http.StatusText(ae.Status), err)
			}
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				fmt.Fprintf(d.a.stderr, "amends demo: cannot list the records at %s (retrying): %v\n", d.api, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-tick.C:
		}
	}
}

// list reads every record of the example's mailer, page by page.
func (d *demo) list(ctx context.Context, c *client.Client) ([]api.Item, error) {
	q := api.Query{Filter: api.Filter{Processor: "Mailer"}, Limit: max(d.pageLimit, 0)}
	var items []api.Item
	for {
		page, err := c.List(ctx, q)
		if err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.Next == "" {
			return items, nil
		}
		q.Cursor = page.Next
	}
}

func (d *demo) mine(it api.Item, run string) bool {
	return strings.HasPrefix(it.Aggregate.AggregateID, "demo-"+run+"-")
}

func (d *demo) printStep(it api.Item) {
	now := d.a.now()
	step := map[aggregate.Status]string{
		aggregate.StatusFailed:    fmt.Sprintf("FAILED     %s, retry %d of %d due %s", it.ErrorCode, it.Retries, it.MaxRetries, relative(time.UnixMilli(it.NextRetryAt), now)),
		aggregate.StatusPrepared:  fmt.Sprintf("PREPARED   replay attempt %d", it.Retries),
		aggregate.StatusSucceeded: fmt.Sprintf("SUCCEEDED  after %d scheduled replays", it.Retries),
	}[it.Status]
	fmt.Fprintf(d.a.stdout, "%s  order %s  record %s  %s.%s  %s\n", now.Format("15:04:05.000"), it.Aggregate.AggregateID, it.ID,
		it.Function.ProcessorName, it.Function.Name, step)
}

// quiet keeps only warnings and errors of a logger.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(levelHandler{slog.LevelWarn, l.Handler()})
}

type levelHandler struct {
	min slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// serverFlag is the --server flag the printed commands need: none for the
// default address.
func serverFlag(api string) string {
	if api == "http://127.0.0.1:8080" {
		return ""
	}
	return " --server " + api
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{h.min, h.Handler.WithAttrs(attrs)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{h.min, h.Handler.WithGroup(name)}
}
