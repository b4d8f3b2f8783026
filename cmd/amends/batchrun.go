package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/server"
)

type batchFlags struct {
	dryRun    bool
	yes       bool
	rate      float64
	limit     int
	requestID string
}

func (f *batchFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&f.dryRun, "dry-run", false, "batch: show how many and which records would be touched, touch none")
	fs.BoolVar(&f.yes, "yes", false, "batch: do it")
	fs.Float64Var(&f.rate, "rate", 0, "batch: records per second (default the server's, 50)")
	fs.IntVar(&f.limit, "limit", 0, "batch: at most this many records (default the server's limit)")
	fs.StringVar(&f.requestID, "request-id", "", "batch: idempotency key of the batch; sending it again returns the first run's result (default: new)")
}

func runBatch(cmd *cobra.Command, a *app, f *commandFlags, ff *filterFlags, bf *batchFlags, name string, params url.Values) error {
	if bf.dryRun == bf.yes {
		return usageErrorf("a batch needs --dry-run (to see what it would do) or --yes (to do it), not %s",
			map[bool]string{true: "both", false: "neither"}[bf.dryRun])
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	if ff.view != "" {
		params.Set("view", ff.view)
	}
	filter, err := server.ParseFilter(params)
	if err != nil {
		return usageErrorf("%v", err)
	}
	req := server.BatchRequest{Filter: filter, Limit: bf.limit, DryRun: bf.dryRun, RatePerSecond: bf.rate, RequestID: bf.requestID, Reason: f.reason}
	if !req.DryRun && req.RequestID == "" {
		req.RequestID = uuid.NewString()
	}
	done, total, counts := 0, 0, map[string]int{}
	progress := client.BatchProgress{
		Start: func(s server.BatchStart) { total = s.Total },
		Outcome: func(o server.BatchOutcome) {
			done++
			counts[o.Outcome]++
			if f.output == "table" && !req.DryRun {
				fmt.Fprintf(a.stderr, "\r%s %d/%d: %s", bar(done, total), done, total, countsText(counts))
			}
		},
	}
	res, err := c.Batch(cmd.Context(), name, req, progress)
	if f.output == "table" && !req.DryRun && done > 0 {
		fmt.Fprintln(a.stderr)
	}
	if err != nil {
		return apiError("", err)
	}
	if f.output == "json" {
		return printJSON(a.stdout, res)
	}
	return printBatch(a, res)
}

// bar draws a progress bar of done out of total.
func bar(done, total int) string {
	const width = 20
	n := width
	if total > 0 {
		n = min(width, done*width/total)
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat("-", width-n) + "]"
}

func countsText(counts map[string]int) string {
	var parts []string
	for _, k := range []string{server.OutcomeApplied, server.OutcomeDuplicate, server.OutcomeRejected, server.OutcomeFailed, server.OutcomeWould, server.OutcomeWouldNot} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func printBatch(a *app, res server.BatchResult) error {
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tOUTCOME\tMESSAGE")
	for _, o := range res.Records {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", o.ID, o.Outcome, o.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	what := "ran"
	if res.DryRun {
		what = "dry run: would touch"
	}
	fmt.Fprintf(a.stdout, "%s %s on %d of %d matching records: %s\n", what, res.Command, len(res.Records), res.Matched, countsText(res.Counts))
	if res.Replayed {
		fmt.Fprintf(a.stdout, "this is the stored result of request %s, which ran before; nothing ran now\n", res.RequestID)
	}
	if !res.DryRun {
		fmt.Fprintf(a.stdout, "request id %s (send it again with --request-id to finish an interrupted run)\n", res.RequestID)
	}
	if !res.Complete {
		return fmt.Errorf("the batch stopped before the end; run it again with --request-id %s to finish it", res.RequestID)
	}
	return nil
}
