package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/natsconn"
)

const benchLong = `Bench measures amends operations next to the raw JetStream operations they
rest on, in the same run, and prints for each scenario the throughput and
p50/p99 latency of both sides and the ratio amends/raw.

Absolute rates move by tens of percent between runs on a shared machine;
the ratio of one run is the figure to compare. A ratio of 0.8 means amends
does 80% of the raw operations per second while doing its own work on top
(encoding, validation, concurrency control).

By default it starts an embedded NATS server on a temporary directory and
talks to it over TCP on loopback; --nats-url measures an existing server or
cluster instead. Scenarios create their own streams, named BENCH_<run>_...,
and delete them afterwards.

Name scenarios as arguments to run only those; --list shows them. --quick
runs every scenario for about a second with small fixtures: it checks that
each runs and produces a ratio, and its figures mean little.

dispatch, record and replay also have a peer side: the same job done by a
Watermill router on JetStream (Retry and PoisonQueue middlewares, the
requeuer), on the same server in the same rounds; VS PEER is amends/peer.
record and replay also have a floor side: the raw operations plus what the
amends side must do that the raw side skips, JetStream's floor for the
amends side's job. For replay, "raw, same bytes": messages as large as a
record's (the stream document Wow readers see, with the record's state).
For record, "raw, same work": each event also received and acked. VS FLOOR
is amends over it.

--concurrency takes a list (1,2,4,8): every scenario then runs once per
worker count, each with fresh fixtures, and --plot FILE.svg (or .png) draws
each scenario's throughput against the worker count, one line per side.

` + envHelp

type benchFlags struct {
	natsURL     string
	creds       string
	storage     string
	duration    time.Duration
	concurrency string
	records     int
	plot        string
	output      string
	quick       bool
	list        bool
	cluster     int
	replicas    int
}

func newBenchCmd(a *app) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [scenario...]",
		Short: "Measure amends next to raw JetStream and print the ratios",
		Long:  benchLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return listScenarios(a.stdout)
			}
			return runBench(cmd.Context(), a, &f, args)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&f.natsURL, "nats-url", "", "measure this NATS server or cluster instead of an embedded one")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file for --nats-url")
	fs.StringVar(&f.storage, "storage", "file", "storage of the scenarios' streams: file or memory")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "measured time per scenario and worker count, shared by its sides")
	fs.StringVar(&f.concurrency, "concurrency", "1", "workers per side, or a comma-separated sweep of up to 8 counts (1,2,4,8)")
	fs.IntVar(&f.records, "records", 0, "records of the large index of the query scenarios (default 1000000, quick 100000)")
	fs.StringVar(&f.plot, "plot", "", "draw throughput against concurrency for each scenario and side to this .svg or .png file")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fs.IntVar(&f.cluster, "cluster", 0, "start an embedded loopback cluster of this many nodes (3 or 5) instead of one server")
	fs.IntVar(&f.replicas, "replicas", 0, "replicas of the scenarios' streams (default: the --cluster size, else 1)")
	fs.BoolVar(&f.quick, "quick", false, "run every scenario for about a second with small fixtures (a smoke test for CI)")
	fs.BoolVar(&f.list, "list", false, "list the scenarios and exit")
	annotateEnv(fs)
	cmd.AddCommand(newBenchStormCmd(a))
	cmd.AddCommand(newBenchFootprintCmd(a))
	cmd.AddCommand(newBenchPartitionsCmd(a))
	return outputs(outputDocument, cmd)
}

func listScenarios(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tAMENDS\tRAW BASELINE")
	for _, s := range bench.Scenarios() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Title, s.Baseline)
	}
	return tw.Flush()
}

func runBench(ctx context.Context, a *app, f *benchFlags, names []string) error {
	scenarios, err := bench.Select(names)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if err := checkOutput(f.output); err != nil {
		return err
	}
	levels, err := parseConcurrency(f.concurrency)
	if err != nil {
		return err
	}
	if f.records != 0 && (f.records < bench.MinQueryRecords || f.records > bench.MaxQueryRecords) {
		return usageErrorf("--records must be between %d and %d, got %d", bench.MinQueryRecords, bench.MaxQueryRecords, f.records)
	}
	if err := checkPlotPath(f.plot); err != nil {
		return err
	}
	if f.duration <= 0 {
		return usageErrorf("--duration must be positive, got %s", f.duration)
	}
	env, err := benchEnv(f, levels)
	if err != nil {
		return err
	}
	duration := f.duration
	if f.quick {
		duration = time.Second
	}
	nc, closeNATS, err := benchConnect(ctx, f)
	if err != nil {
		return err
	}
	defer closeNATS()
	if env.JS, err = jetstream.New(nc); err != nil {
		return err
	}
	env.Dial = benchDial(f, nc)
	runner := &bench.Runner{Env: env, Duration: duration, Sweep: levels, Progress: func(s bench.Scenario, c int) {
		a.logger.Info("bench scenario", "name", s.Name, "concurrency", c, "duration", duration)
	}}
	results, err := runner.Run(ctx, scenarios)
	if f.output == "json" {
		if werr := printJSON(a.stdout, results); werr != nil && err == nil {
			err = werr
		}
	} else {
		printResults(a.stdout, results)
	}
	if f.plot != "" && len(results) > 0 {
		if perr := writePlot(f.plot, results); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// benchEnv is the environment of the scenarios the flags ask for: the
// storage, and the replicas the cluster or server allows.
func benchEnv(f *benchFlags, levels []int) (*bench.Env, error) {
	env := &bench.Env{Concurrency: levels[0], Records: f.records, Prefix: strings.ReplaceAll(uuid.NewString()[:8], "-", ""), Quick: f.quick}
	var err error
	if env.Storage, err = benchStorage(f.storage); err != nil {
		return nil, err
	}
	switch {
	case f.cluster != 0 && f.natsURL != "":
		return nil, usageErrorf("--cluster starts its own servers; it cannot be combined with --nats-url")
	case f.cluster != 0 && f.cluster != 3 && f.cluster != 5:
		return nil, usageErrorf("--cluster must be 3 or 5 nodes, got %d", f.cluster)
	case !bounds.Within(f.replicas, 0, 5):
		return nil, usageErrorf("--replicas must be between 1 and 5, got %d", f.replicas)
	case f.replicas > 1 && f.natsURL == "" && f.replicas > f.cluster:
		return nil, usageErrorf("--replicas %d needs at least as many servers: add --cluster %d or --nats-url", f.replicas, max(f.replicas, 3))
	}
	env.Replicas = max(f.replicas, 1)
	if f.replicas == 0 && f.cluster > 0 {
		env.Replicas = f.cluster
	}
	return env, nil
}

// benchStorage is the storage --storage names: file or memory.
func benchStorage(s string) (jetstream.StorageType, error) {
	switch s {
	case "file":
		return jetstream.FileStorage, nil
	case "memory":
		return jetstream.MemoryStorage, nil
	}
	return 0, usageErrorf("--storage must be file or memory, got %q", s)
}

// benchDial opens the peer sides' own connections to the server nc is on.
func benchDial(f *benchFlags, nc *nats.Conn) func() (*nats.Conn, error) {
	if f.natsURL != "" {
		return func() (*nats.Conn, error) {
			return natsconn.Connect(natsconn.ClientConfig{URL: f.natsURL, CredsFile: f.creds, Name: "amends bench peer"})
		}
	}
	urls := strings.Join(nc.Servers(), ",")
	return func() (*nats.Conn, error) { return nats.Connect(urls, nats.Name("amends bench peer")) }
}

// maxSweep bounds the worker counts of --concurrency.
const (
	maxSweep   = 8
	maxWorkers = 64
)

// parseConcurrency reads --concurrency: one worker count or a list.
func parseConcurrency(s string) ([]int, error) {
	bad := func() error {
		return usageErrorf("--concurrency must be a worker count between 1 and %d, or a comma-separated list of up to %d distinct ones (1,2,4,8), got %q",
			maxWorkers, maxSweep, s)
	}
	if len(s) > 64 {
		return nil, bad()
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxSweep {
		return nil, bad()
	}
	levels := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || !bounds.Within(n, 1, maxWorkers) || slices.Contains(levels, n) {
			return nil, bad()
		}
		levels = append(levels, n)
	}
	return levels, nil
}

// benchConnect starts the embedded server (unless --nats-url) and connects
// over TCP. The returned function closes both.
func benchConnect(ctx context.Context, f *benchFlags) (*nats.Conn, func(), error) {
	nc, closeNATS, _, err := benchConnectDir(ctx, f)
	return nc, closeNATS, err
}

// benchConnectDir is benchConnect that also returns the embedded server's
// JetStream store directory ("" with --nats-url or --cluster).
func benchConnectDir(ctx context.Context, f *benchFlags) (*nats.Conn, func(), string, error) {
	if f.natsURL != "" {
		nc, err := natsconn.Connect(natsconn.ClientConfig{URL: f.natsURL, CredsFile: f.creds, Name: "amends bench"})
		if err != nil {
			return nil, nil, "", err
		}
		return nc, nc.Close, "", nil
	}
	if f.cluster > 0 {
		nc, closeNATS, err := benchCluster(ctx, f.cluster)
		return nc, closeNATS, "", err
	}
	dir, err := os.MkdirTemp("", "amends-bench-")
	if err != nil {
		return nil, nil, "", err
	}
	srv, err := natsconn.StartEmbedded(ctx, natsconn.EmbeddedConfig{DataDir: dir, Port: natsconn.RandomPort})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, "", err
	}
	nc, err := srv.Connect(nats.Name("amends bench"))
	if err != nil {
		srv.Shutdown()
		_ = os.RemoveAll(dir)
		return nil, nil, "", err
	}
	return nc, func() { nc.Close(); srv.Shutdown(); _ = os.RemoveAll(dir) }, dir, nil
}

func printResults(w io.Writer, results []bench.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tWORKERS\tSIDE\tPER SECOND\tP50\tP99\tRATIO\tVS PEER\tVS FLOOR\t")
	for _, r := range results {
		side := func(m *bench.Measurement) {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\t\t\t\n", r.Scenario, r.Concurrency, m.Side, rate(m.PerSec), round(m.P50), round(m.P99))
		}
		ratio, vsPeer, vsFloor := "-", "", ""
		if r.Raw != nil {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
			side(r.Raw)
		}
		if r.Floor != nil {
			vsFloor = fmt.Sprintf("%.2fx", r.FloorRatio)
			side(r.Floor)
		}
		if r.Peer != nil {
			vsPeer = fmt.Sprintf("%.2fx", r.PeerRatio)
			side(r.Peer)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, r.Concurrency, r.Amends.Side, rate(r.Amends.PerSec),
			round(r.Amends.P50), round(r.Amends.P99), ratio, vsPeer, vsFloor)
		for _, k := range slices.Sorted(maps.Keys(r.Notes)) {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.4g\t\t\t\t\t\t\n", r.Scenario, r.Concurrency, k, r.Notes[k])
		}
	}
	_ = tw.Flush()
}

// rate prints a rate whole, or with three significant digits below 100
// (a summary at 1M records runs about once a second).
func rate(perSec float64) string {
	if perSec < 100 {
		return strconv.FormatFloat(perSec, 'g', 3, 64)
	}
	return fmt.Sprintf("%.0f", perSec)
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > 10*time.Microsecond:
		return d.Round(time.Microsecond)
	default:
		return d
	}
}
