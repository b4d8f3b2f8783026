package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
	"github.com/amends-dev/amends/internal/bounds"
)

const partitionsLong = `Partitions measures serve instances with --partitions on a NATS cluster
(issue #42; docs/scaling.md).

For each count of --processors it starts a cluster of three JetStream
servers clustered over loopback (in this process), an instance without
records (the heap that is not the index), and writes --records generated
views into the views bucket (R3), their processors drawn from a Zipf law
(exponent 1.1: a few processors hold most records). Then for each count of
--instances it runs that many amends serve processes (this binary, each
its own process) with --partitions, and reports per instance: the records
its index holds over its even share, its live heap (go_gc_heap_live_bytes
at a GC while it answered a page) over that of one instance alone over
records/instances views drawn the same way, in the same run, the time until
its API was up and until every instance answered every record with the
plan settled (the start-up of k instances), and the mean latency of a count, a summary and a page of 50 of every record at
it. With two instances or more it then kills one (SIGKILL) --kills times,
in turn, and reports the time until another instance answers every
record again (the lease TTL bounds it, plus the load of the partitions
taken over, from the snapshots each instance saves every second:
--index-snapshot-every 1s) and until the killed one, started again under
its name, is placed again.

The views are generated, without histories: the instances' passes and
audits are off (--scheduler-initial-delay 24h, --index-audit-rate 0).
--quick measures 3000 records, 20 processors, 1 and 2 instances and one
kill (a smoke test).

` + envHelp

type partitionsFlags struct {
	records    int
	processors string
	instances  string
	kills      int
	leaseTTL   time.Duration
	output     string
	quick      bool
	killLoop   int
	loopRecs   int
}

func newBenchPartitionsCmd(a *app) *cobra.Command {
	var f partitionsFlags
	cmd := &cobra.Command{
		Use:   "partitions",
		Short: "Measure serve instances with --partitions on a NATS cluster: records, heap and start-up per instance, query latency, kill -9",
		Long:  partitionsLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchPartitions(cmd.Context(), a, &f)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.IntVar(&f.records, "records", 0, "records spread over the processors, 1000 to 10000000 (default 30000, quick 3000)")
	fs.StringVar(&f.processors, "processors", "", "processor counts, comma-separated, 2 to 1000 each (default 20,100, quick 20)")
	fs.StringVar(&f.instances, "instances", "", "instance counts, comma-separated, 1 to 8 each (default 1,2,3, quick 1,2)")
	fs.IntVar(&f.kills, "kills", -1, "kills of an instance per count of instances above one, 0 to 20 (default 2, quick 1)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 5*time.Second, "the instances' --lease-ttl, 1s to 1m")
	fs.IntVar(&f.killLoop, "kill-loop", 0, "then the kill loop: this many rounds, 0 to 100 (0: none), each a SIGKILL of one of three instances preparing real records while more are made")
	fs.IntVar(&f.loopRecs, "kill-loop-records", 3000, "records of the kill loop, made through the event store, 100 to 1000000")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fs.BoolVar(&f.quick, "quick", false, "small fixtures: a smoke test")
	annotateEnv(fs)
	return outputs(outputDocument, cmd)
}

// benchPartitionsConfig validates the flags.
func benchPartitionsConfig(f *partitionsFlags) (bench.PartitionsConfig, error) {
	c := bench.PartitionsConfig{Records: 30_000, Processors: []int{20, 100}, Instances: []int{1, 2, 3}, Kills: 2, LeaseTTL: f.leaseTTL}
	if f.quick {
		c = bench.PartitionsConfig{Records: 3000, Processors: []int{20}, Instances: []int{1, 2}, Kills: 1, LeaseTTL: f.leaseTTL}
	}
	var err error
	if f.records != 0 {
		if !bounds.Within(f.records, 1000, 10_000_000) {
			return c, usageErrorf("--records must be between 1000 and 10000000, got %d", f.records)
		}
		c.Records = f.records
	}
	if f.processors != "" {
		if c.Processors, err = intList("--processors", f.processors, 2, 1000); err != nil {
			return c, err
		}
	}
	if f.instances != "" {
		if c.Instances, err = intList("--instances", f.instances, 1, 8); err != nil {
			return c, err
		}
	}
	if f.kills != -1 {
		if !bounds.Within(f.kills, 0, 20) {
			return c, usageErrorf("--kills must be between 0 and 20, got %d", f.kills)
		}
		c.Kills = f.kills
	}
	if err := checkRange("lease-ttl", f.leaseTTL, time.Second, time.Minute, ""); err != nil {
		return c, err
	}
	if err := checkRange("kill-loop", f.killLoop, 0, 100, " (0: none)"); err != nil {
		return c, err
	}
	if err := checkRange("kill-loop-records", f.loopRecs, 100, 1_000_000, ""); err != nil {
		return c, err
	}
	return c, checkOutput(f.output)
}

func runBenchPartitions(ctx context.Context, a *app, f *partitionsFlags) error {
	c, err := benchPartitionsConfig(f)
	if err != nil {
		return err
	}
	if c.Exe, err = os.Executable(); err != nil {
		return fmt.Errorf("find the amends binary to run the instances: %w", err)
	}
	c.Logger = a.logger
	c.Cluster = func(ctx context.Context) (string, jetstream.JetStream, func(), error) {
		nc, stop, err := benchCluster(ctx, 3)
		if err != nil {
			return "", nil, nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			stop()
			return "", nil, nil, err
		}
		return strings.Join(nc.Servers(), ","), js, stop, nil
	}
	res, err := bench.RunPartitions(ctx, c)
	if err == nil && f.killLoop > 0 {
		var loop bench.KillLoopResult
		loop, err = bench.RunKillLoop(ctx, c, f.loopRecs, c.Processors[0], f.killLoop)
		res.KillLoop = &loop
		err = errors.Join(err, loop.Check())
	}
	return printMeasured(a.stdout, f.output, res, func(w io.Writer) error { return printPartitions(w, res) }, err)
}

func printPartitions(w io.Writer, r bench.PartitionsResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%d records; an instance without records: %.1f MiB live heap\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Records, float64(r.Empty)/(1<<20))
	fmt.Fprintln(tw, "processors\tinstances\tinstance\theld\t/share\tlive heap\talone at share\theap/alone\tup\tserved\tcount\tsummary\tlist 50\t")
	for _, in := range r.Instances {
		alone := "-" // one instance: it is alone
		if in.Alone > 0 {
			alone = fmt.Sprintf("%.1f MiB", float64(in.Alone)/(1<<20))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%.2f\t%.1f MiB\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", in.Processors, in.Instances, in.Instance, in.Held, in.Share,
			float64(in.HeapLive)/(1<<20), alone, in.HeapOverAlone, round(in.Up), round(in.Served), round(in.Count), round(in.Summary), round(in.List))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l := r.KillLoop; l != nil {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\t\t\t\t\t\t")
		fmt.Fprintf(tw, "Kill loop: %d records, %d more made during it; %d prepared, %d prepared twice\t\t\t\t\t\t\n", l.Records, l.Made, l.Prepared, l.Twice)
		fmt.Fprintln(tw, "round\tkilled\tserved again\tshort answers\tanswers naming missing partitions\t")
		for _, row := range l.Rounds {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t\n", row.Round, row.Killed, round(row.Reserved), row.Short, row.Missing)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Kills) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\t\t\t\t\t\t")
		fmt.Fprintln(tw, "processors\tinstances\tkilled\tserved again\tlease TTL\trejoined\t")
		for _, k := range r.Kills {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t\n", k.Processors, k.Instances, k.Killed, round(k.Reserved), k.LeaseTTL, round(k.Rejoined))
		}
	}
	return tw.Flush()
}
