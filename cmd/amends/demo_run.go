package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/examples/orders"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
)

// demo is the example service and the watcher that tells its story.
type demo struct {
	a   *app
	f   *demoFlags
	js  jetstream.JetStream
	api string
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
	var wg sync.WaitGroup
	var perr error
	wg.Go(func() { perr = svc.Processor.Run(pctx) })
	defer func() { stop(); wg.Wait() }()
	select {
	case <-svc.Processor.Ready():
	case <-svc.Processor.Closed():
		wg.Wait()
		return fmt.Errorf("example service stopped: %v", perr)
	case <-ctx.Done():
		return nil
	}

	c, err := client.New(d.api, "", nil)
	if err != nil {
		return err
	}
	printDemoIntro(d.a, d.api, d.f.orders)
	run := uuid.NewString()[:8]
	for i := range d.f.orders {
		id := fmt.Sprintf("demo-%s-%d", run, i+1)
		placed := orders.Placed{Customer: "Ada", Email: "ada@example.com", Lines: []orders.Line{{SKU: "BOOK-42", Qty: i + 1}}}
		if _, err := svc.Orders.Place(ctx, id, placed); err != nil {
			return fmt.Errorf("place order %s: %w", id, err)
		}
		fmt.Fprintf(d.a.stdout, "placed order %s\n", id)
	}
	ok := d.watch(ctx, c, run)
	if ok {
		fmt.Fprintf(d.a.stdout, `
every record SUCCEEDED: the mail server took %d sends for %d mails, and only the
mailer was replayed: the inventory projector ran once per order (%d calls).
`, mail.Tries(), d.f.orders, svc.Processor.FunctionMetrics("InventoryProjector", "onPlaced").Calls.Load())
		fmt.Fprintf(d.a.stdout, `
look at the records:
  go run ./cmd/amends list --view succeeded%[1]s
  go run ./cmd/amends history <ID>%[1]s
  go run ./cmd/amends summary%[1]s
`, serverFlag(d.api))
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
// reports whether they did (false if ctx ended or --exit's timeout passed).
func (d *demo) watch(ctx context.Context, c *client.Client, run string) bool {
	if d.f.exit {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.f.timeout)
		defer cancel()
	}
	seen := map[string]uint64{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		page, err := c.List(ctx, "", nil)
		if err == nil {
			done := 0
			for _, it := range page.Items {
				if !d.mine(it, run) {
					continue
				}
				if seen[it.ID] != it.Version {
					seen[it.ID] = it.Version
					d.printStep(it)
				}
				if it.Status == aggregate.StatusSucceeded {
					done++
				}
			}
			if done == d.f.orders {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func (d *demo) mine(it projection.Item, run string) bool {
	return len(it.Aggregate.AggregateID) > len("demo-"+run) && it.Aggregate.AggregateID[:len("demo-"+run)] == "demo-"+run
}

func (d *demo) printStep(it projection.Item) {
	now := d.a.now()
	step := map[aggregate.Status]string{
		aggregate.StatusFailed:    fmt.Sprintf("FAILED     %s, retry %d of %d due %s", it.ErrorCode, it.Retries, it.MaxRetries, relative(time.UnixMilli(it.NextRetryAt), now)),
		aggregate.StatusPrepared:  fmt.Sprintf("PREPARED   replay attempt %d", it.Retries),
		aggregate.StatusSucceeded: fmt.Sprintf("SUCCEEDED  after %d scheduled replays", it.Retries),
	}[it.Status]
	fmt.Fprintf(d.a.stdout, "%s  %s  %s.%s  %s\n", now.Format("15:04:05.000"), it.Aggregate.AggregateID,
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
