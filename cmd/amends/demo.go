package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/scheduler"
)

const demoLong = `Demo shows amends at work: an example orders service whose mailer fails the
first four times it mails each order. The processor retries once at once,
then records an ExecutionFailed record; the scheduler prepares it after its
short backoff (1 s, doubling); the service replays the order event to the
mailer alone, which fails again (and again at once), so the record goes
back to FAILED; the second replay succeeds.

By default it runs the whole control plane itself, like serve with a
scheduler pass every second, on a temporary data directory, with the HTTP
API on --http so that the other commands work in another terminal:

    go run ./cmd/amends list --view succeeded

With --nats-url (and --server, and --token if that API has tokens) it runs
only the example service against an amends serve you started; records are
then prepared when that server's scheduler passes (--scheduler-period).
It prints the NATS URL (for natscli) and the API's, and names each record
by its record id, which the other commands take, beside its order id.

It prints each record's steps as the API shows them, then the commands to
look at them, and runs until Ctrl-C (or, with --exit, until every record
succeeded).`

type demoFlags struct {
	natsURL string
	server  string
	token   string
	http    string
	orders  int
	exit    bool
	timeout time.Duration
}

func newDemoCmd(a *app) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run an example service whose failures are recorded, retried and compensated",
		Long:  demoLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRange("orders", f.orders, 1, 100, ""); err != nil {
				return err
			}
			if err := checkRange("timeout", f.timeout, time.Second, 24*time.Hour, ""); err != nil {
				return err
			}
			if f.natsURL != "" {
				if err := natsconn.CheckURLs(f.natsURL); err != nil {
					return usageErrorf("--nats-url: %v", err)
				}
				if _, err := client.New(f.server, f.token, nil); err != nil {
					return usageErrorf("--server: %v", err)
				}
				return demoAgainstServer(cmd.Context(), a, &f)
			}
			host, _, err := parseHostPort("http", f.http, "127.0.0.1:8080")
			if err != nil {
				return err
			}
			if !isLoopback(host) {
				return usageErrorf("--http %s is not a loopback address: the demo's API has no tokens, so it serves only this machine; bind to loopback (--http %s)",
					f.http, loopbackHint(f.http))
			}
			return demoEmbedded(cmd.Context(), a, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.natsURL, "nats-url", "", "run only the example service against this NATS (an amends serve's); default: run everything here")
	fs.StringVar(&f.server, "server", "http://127.0.0.1:8080", "with --nats-url: the API of that amends serve")
	fs.StringVar(&f.token, "token", "", "with --nats-url: a viewer or operator token of that API, if it has tokens")
	fs.StringVar(&f.http, "http", "127.0.0.1:8080", "without --nats-url: where this demo serves the API, on loopback (a free port if this one is taken)")
	fs.IntVar(&f.orders, "orders", 3, "orders to place, 1 to 100")
	fs.BoolVar(&f.exit, "exit", false, "stop once every record succeeded")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "with --exit: give up after this long, 1s to 24h")
	annotateEnv(fs)
	return cmd
}

// demoEmbedded runs serve with a fast scheduler and the example service.
func demoEmbedded(ctx context.Context, a *app, f *demoFlags) error {
	dir, err := os.MkdirTemp("", "amends-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr := f.http
	if l, err := net.Listen("tcp", addr); err != nil {
		addr = "127.0.0.1:0" // taken: any free port
	} else {
		l.Close()
	}
	cfg := serveConfig{
		embedded:       &natsconn.EmbeddedConfig{DataDir: dir, Host: "127.0.0.1", Port: natsconn.RandomPort},
		storage:        jetstream.FileStorage,
		startupTimeout: defaultStartupTimeout,
		replicas:       1,
		maxMsgSize:     1 << 20,
		compression:    jetstream.S2Compression, // as serve's default
		http:           addr,
		scheduler:      &schedulerConfig{period: time.Second, batch: 100, workers: 4, leaseTTL: scheduler.DefaultLeaseTTL, drainRate: scheduler.DefaultDrainRate, rate: scheduler.DefaultRate},
		ready:          a.serveReady,
		extra: func(ctx context.Context, js jetstream.JetStream, info serveInfo) ([]component, error) {
			d := &demo{a: a, f: f, js: js, api: info.HTTPURL, natsURL: info.NATSURL}
			return []component{{"demo", d.run}}, nil
		},
	}
	// The control plane logs only warnings: the demo's story goes to stdout.
	return run(ctx, cfg, quiet(a.logger))
}

// demoAgainstServer runs the example service against an existing serve.
func demoAgainstServer(ctx context.Context, a *app, f *demoFlags) error {
	nc, err := natsconn.Connect(natsconn.ClientConfig{URL: f.natsURL, Name: "amends demo"})
	if err != nil {
		return settingError(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	d := &demo{a: a, f: f, js: js, api: f.server, token: f.token, natsURL: nc.ConnectedUrlRedacted()}
	err = runComponents(ctx, a.logger, component{"demo", d.run})
	return err
}

func printDemoIntro(a *app, api, natsURL string, orders int) {
	fmt.Fprintf(a.stdout, `amends demo: an orders service whose mailer fails the first 4 sends of each mail.
API  %s: in another terminal,  export AMENDS_SERVER=%s
Dashboard %[2]s/ in a browser
NATS %s: for natscli,  nats --server %s stream ls
placing %d orders...
`, api, api, natsURL, natsURL, orders)
}
