package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
	"github.com/amends-dev/amends/internal/bounds"
)

const footprintLong = `Footprint measures what the records cost to keep.

On disk: records that each failed, were replayed --attempts times (all but
the last replay failing again) and succeeded, made through the event store
and projected (--per-shape of each), and the bytes and messages per record
of every stream and bucket they touch, as NATS' own stream info counts
them, and the bytes their files take on disk (the embedded server, file
storage): measured over the full blocks, which the server compresses
once they are full. --compression both measures the records with the
compensation stream and the views bucket raw (none) and with S2 (s2, as
serve creates them). The "after retention" columns are the same streams after serve's
retention sweep (30 days for SUCCEEDED records, on a clock the records
were made 31 days before) removed every record: what is left is the
streams' own overhead and the views bucket's delete markers.

In memory and at start-up: a views bucket filled with --records generated
views (written directly, as projection's BenchmarkRebuild does), then, in
the same run, a raw watch of the bucket (the floor of a full load), the
index's full load and its heap per record, a snapshot saved, its bytes
read back from the object store (the floor of a start from it), and the
index's start from the snapshot, with the part of it that read and
decoded the snapshot before the index's structures were built. Ratios are
to the floors of the same run. Then the index queries of the query
scenarios (due, list, summary, count) on that index and on one of 10 000
records.

--records 10000000 needs about 9 GB of disk for the views bucket (888
bytes a generated view) and room for the index's 4 GB of heap twice over;
writing the views takes most of the run (28 minutes on a loaded 2-core
machine). --quick measures 100 records a shape and 20 000 at
start-up (a smoke test for CI).

` + envHelp

type footprintFlags struct {
	bench       benchFlags
	attempts    string
	perShape    int
	compression string
	startup     string
}

func newBenchFootprintCmd(a *app) *cobra.Command {
	var f footprintFlags
	cmd := &cobra.Command{
		Use:   "footprint",
		Short: "Measure the bytes on disk and in memory per record and the index's start-up, full and from a snapshot",
		Long:  footprintLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFootprint(cmd.Context(), a, &f)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&f.attempts, "attempts", "1,3,10", "record shapes measured on disk: replays until success, comma-separated, 1 to 100 each")
	fs.StringVar(&f.compression, "compression", "both", "the streams and buckets of the records on disk: none, s2 (the compensation stream and the views bucket compressed) or both, in one run")
	fs.IntVar(&f.perShape, "per-shape", 0, "records made of each shape, 10 to 100000 (default 2000, quick 100)")
	fs.StringVar(&f.startup, "startup", "", "index sizes of the start-up, comma-separated, 1000 to 10000000 each (default 100000,1000000, quick 20000)")
	fs.IntVar(&f.bench.records, "records", 0, "the largest start-up size (adds it to --startup), 1000 to 10000000")
	fs.StringVar(&f.bench.natsURL, "nats-url", "", "measure on this NATS server instead of an embedded one")
	fs.StringVar(&f.bench.creds, "nats-creds", "", "NATS credentials file for --nats-url")
	fs.StringVar(&f.bench.storage, "storage", "file", "storage of the streams and buckets: file or memory (memory: 10M records need ~12 GB more RAM)")
	fs.StringVarP(&f.bench.output, "output", "o", "table", "output format: table or json")
	fs.BoolVar(&f.bench.quick, "quick", false, "small fixtures: a smoke test for CI")
	annotateEnv(fs)
	return outputs(outputDocument, cmd)
}

// The bounds of the footprint flags.
const (
	maxFootprintAttempts = 100
	minFootprintShape    = 10
	maxFootprintShape    = 100_000
	minFootprintStartup  = 1000
	maxFootprintStartup  = 10_000_000
)

func footprintConfig(f *footprintFlags) (bench.FootprintConfig, error) {
	var c bench.FootprintConfig
	attempts, err := intList("--attempts", f.attempts, 1, maxFootprintAttempts)
	if err != nil {
		return c, err
	}
	c.Attempts = attempts
	if c.Compression, err = compressionVariants(f.compression); err != nil {
		return c, err
	}
	if f.perShape != 0 && (f.perShape < minFootprintShape || f.perShape > maxFootprintShape) {
		return c, usageErrorf("--per-shape must be between %d and %d, got %d", minFootprintShape, maxFootprintShape, f.perShape)
	}
	c.PerShape = f.perShape
	if f.startup != "" {
		if c.Startup, err = intList("--startup", f.startup, minFootprintStartup, maxFootprintStartup); err != nil {
			return c, err
		}
	}
	if n := f.bench.records; n != 0 {
		if !bounds.Within(n, minFootprintStartup, maxFootprintStartup) {
			return c, usageErrorf("--records must be between %d and %d, got %d", minFootprintStartup, maxFootprintStartup, n)
		}
		if len(c.Startup) == 0 { // --startup's default, below n
			for _, m := range bench.DefaultFootprintStartup(f.bench.quick) {
				if m < n {
					c.Startup = append(c.Startup, m)
				}
			}
		}
		if !slices.Contains(c.Startup, n) {
			c.Startup = append(c.Startup, n)
		}
	}
	return c, checkOutput(f.bench.output)
}

// compressionVariants are the variants --compression asks for.
func compressionVariants(v string) ([]string, error) {
	switch v {
	case "both", "": // "": the flag's default
		return []string{bench.CompressionNone, bench.CompressionS2}, nil
	case bench.CompressionNone, bench.CompressionS2:
		return []string{v}, nil
	}
	return nil, usageErrorf("--compression must be none, s2 or both, got %q", clipText(v, 40))
}

// intList parses a comma-separated list of at most 8 integers within
// [lo, hi].
func intList(flag, s string, lo, hi int) ([]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 8 {
		return nil, usageErrorf("%s takes at most 8 values, got %d", flag, len(parts))
	}
	var out []int
	for _, p := range parts {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(p), &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(p) {
			return nil, usageErrorf("%s: %q is not a whole number", flag, p)
		}
		if !bounds.Within(n, lo, hi) {
			return nil, usageErrorf("%s values must be between %d and %d, got %d", flag, lo, hi, n)
		}
		out = append(out, n)
	}
	return out, nil
}

func runFootprint(ctx context.Context, a *app, f *footprintFlags) error {
	c, err := footprintConfig(f)
	if err != nil {
		return err
	}
	env := &bench.Env{Prefix: strings.ReplaceAll(uuid.NewString()[:8], "-", ""), Quick: f.bench.quick, Concurrency: 1, Replicas: 1}
	switch f.bench.storage {
	case "file":
		env.Storage = jetstream.FileStorage
	case "memory":
		env.Storage = jetstream.MemoryStorage
	default:
		return usageErrorf("--storage must be file or memory, got %q", f.bench.storage)
	}
	nc, closeNATS, dir, err := benchConnectDir(ctx, &f.bench)
	if err != nil {
		return err
	}
	env.StoreDir = dir
	defer closeNATS()
	if env.JS, err = jetstream.New(nc); err != nil {
		return err
	}
	c.Logger = a.logger
	res, err := bench.RunFootprint(ctx, env, c)
	return printMeasured(a.stdout, f.bench.output, res, func(w io.Writer) error { return printFootprint(w, res) }, err)
}

func printFootprint(w io.Writer, r bench.FootprintResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "On disk, per record (bytes: NATS stream info, raw; on disk: the stream's files)\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "compression\tattempts\twhat\tbytes\ton disk\tfull blocks\tmsgs\tbytes after retention\tmsgs after retention\t")
	for _, d := range r.Disk {
		disk := "-"
		if d.DiskBytesPerRecord > 0 {
			disk = fmt.Sprintf("%.0f", d.DiskBytesPerRecord)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%s\t%d\t%.1f\t%.0f\t%.1f\t\n", d.Compression, d.Attempts, d.What, d.BytesPerRecord, disk, d.FullBlocks,
			d.MsgsPerRecord, d.AfterBytesPerRecord, d.AfterMsgsPerRecord)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "Start-up\t\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "records\traw watch\tfull load\tfull/raw\tsnapshot read\tfrom snapshot\tsnap/read\tsnap/full\tsnapshot B/rec\tindex heap B/rec\t")
	for _, s := range r.Startup {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f\t%s\t%s\t%.2f\t%.3f\t%.0f\t%.0f\t\n", s.Records, round(s.RawWatch), round(s.FullLoad),
			ratio(s.FullLoad, s.RawWatch), round(s.SnapshotRead), round(s.FromSnapshot), ratio(s.FromSnapshot, s.SnapshotRead),
			ratio(s.FromSnapshot, s.FullLoad), float64(s.SnapshotBytes)/float64(s.Records), s.IndexBytesPerRecord)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "records\tfill\tsnapshot save\tsnapshot read+decode\tread+decode/read\tviews bucket B/rec\theap in use\t")
	for _, s := range r.Startup {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f\t%.0f\t%.1f GiB\t\n", s.Records, round(s.Fill), round(s.SnapshotSave), round(s.SnapshotLoad),
			ratio(s.SnapshotLoad, s.SnapshotRead), s.BucketBytesPerRecord, float64(s.HeapInUse)/(1<<30))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t")
	fmt.Fprintln(tw, "Index queries (mean per call)\t\t\t\t")
	fmt.Fprintln(tw, "query\trecords\tper call\tto 10k\t")
	small := map[string]time.Duration{}
	for _, q := range r.Queries {
		if q.Records == 10_000 {
			small[q.Query] = q.PerCall
		}
	}
	for _, q := range r.Queries {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t\n", q.Query, q.Records, q.PerCall, ratio(q.PerCall, small[q.Query]))
	}
	return tw.Flush()
}

// ratio is a/b, 0 when b is.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
