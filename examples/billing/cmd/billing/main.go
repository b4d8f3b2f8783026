// Command billing runs the billing example as one binary. With -nats it
// connects to a NATS server (such as `amends serve`'s --nats-listen
// address); without it, it embeds one with its data in -data. It issues
// one invoice, waits for Ctrl-C and stops.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/examples/billing"
	"github.com/amends-dev/amends/natsembed"
)

func main() {
	natsURL := flag.String("nats", "", "NATS server URL, e.g. nats://127.0.0.1:4222 (default: embed one)")
	dataDir := flag.String("data", "billing-data", "data directory of the embedded NATS server")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *natsURL, *dataDir); err != nil {
		fmt.Fprintln(os.Stderr, "billing:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, natsURL, dataDir string) error {
	var nc *nats.Conn
	var err error
	if natsURL != "" {
		nc, err = nats.Connect(natsURL)
	} else {
		var srv *natsembed.Server
		if srv, err = natsembed.Start(ctx, natsembed.Config{DataDir: dataDir, Port: natsembed.RandomPort}); err != nil {
			return err
		}
		defer srv.Shutdown()
		nc, err = srv.Connect()
	}
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	mail := billing.NewFlakyMailer(2)
	svc, err := billing.New(js, mail, billing.NewLedger())
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	if err := svc.Start(ctx); err != nil {
		stop()
		return err
	}
	defer func() { stop(); _ = svc.Wait() }()
	st, err := billing.Issue(ctx, svc, fmt.Sprint("inv-", os.Getpid()), billing.Invoice{Email: "ada@example.com", Cents: 1200})
	if err != nil {
		return err
	}
	slog.Info("invoice issued; Ctrl-C stops", "event", st.Events[0].ID)
	<-ctx.Done()
	return nil
}
