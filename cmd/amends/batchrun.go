package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/server"
)

type batchFlags struct {
	confirmFlags
	rate      float64
	limit     int
	requestID string
}

func (f *batchFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.confirmFlags.add(cmd, "", "what (one record: whether it would accept it; a batch: how many and which records)")
	fs.Float64Var(&f.rate, "rate", 0, fmt.Sprintf("batch: records per second, up to %g (default the server's, %g)", api.MaxBatchRate, api.DefaultBatchRate))
	fs.IntVar(&f.limit, "limit", 0, "batch: at most this many records (default the server's limit)")
	fs.StringVar(&f.requestID, "request-id", "", "batch: idempotency key of the batch; sending it again returns the first run's result (default: new)")
}

// check validates the batch flags as usage errors.
func (f *batchFlags) check() error {
	if err := f.confirmFlags.check("a batch"); err != nil {
		return err
	}
	switch {
	case !bounds.Within(f.rate, 0, api.MaxBatchRate) || f.rate != f.rate:
		return usageErrorf("--rate must be from 0 (the server's default, %g) to %g records per second, got %g", api.DefaultBatchRate, api.MaxBatchRate, f.rate)
	case f.limit < 0:
		return usageErrorf("--limit must be 0 (the server's limit) or more, got %d", f.limit)
	case len(f.requestID) > eventstore.MaxIDLength:
		return usageErrorf("--request-id is %d bytes, over the limit of %d", len(f.requestID), eventstore.MaxIDLength)
	case f.requestID != "" && strings.TrimSpace(f.requestID) == "":
		return usageErrorf("--request-id is blank; leave it out for a new one")
	}
	return nil
}

// idle is the longest wait for a line of the batch's progress: --timeout,
// or longer if --rate paces records further apart.
func (f *batchFlags) idle(timeout time.Duration) time.Duration {
	if f.rate > 0 {
		return max(timeout, time.Duration(float64(2*time.Second)/f.rate))
	}
	return timeout
}

func runBatch(cmd *cobra.Command, a *app, f *commandFlags, ff *filterFlags, bf *batchFlags, name api.Command, params url.Values) error {
	if err := bf.check(); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	filters := ff.describe(params)
	if ff.view != "" {
		params.Set("view", ff.view)
	}
	filter, err := server.ParseFilter(params)
	if err != nil {
		return usageErrorf("%v", err)
	}
	c, err := f.client(bf.idle(f.timeout))
	if err != nil {
		return err
	}
	req := api.BatchRequest{Filter: filter, Limit: bf.limit, DryRun: bf.dryRun, RatePerSecond: bf.rate, RequestID: bf.requestID, Reason: f.reason}
	if !req.DryRun && req.RequestID == "" {
		req.RequestID = uuid.NewString()
	}
	pr := &progress{w: a.stderr, tty: isTerminal(a.stderr), on: f.output == "table" && !req.DryRun, name: string(name)}
	res, err := c.Batch(cmd.Context(), name, req, client.BatchProgress{Start: pr.start, Outcome: pr.outcome})
	pr.end()
	if err != nil {
		if errors.Is(err, client.ErrTimeout) && !req.DryRun {
			return fmt.Errorf("%v; the batch may still be running on the server: send it again with --request-id %s to read its result, or raise --timeout", err, req.RequestID)
		}
		return apiError(cmd, "", err)
	}
	if f.output == "json" {
		if err := printJSON(a.stdout, res); err != nil {
			return err
		}
		return batchError(res)
	}
	return printBatch(a, res, filters)
}

// progress shows a running batch on stderr: a bar redrawn in place on a
// terminal, otherwise a plain line at every tenth of the records.
type progress struct {
	w           io.Writer
	tty, on     bool
	name        string
	done, total int
	counts      map[string]int
	drawn       bool
}

func (p *progress) start(s api.BatchStart) { p.total = s.Total }

func (p *progress) outcome(o api.BatchOutcome) {
	p.done++
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	p.counts[o.Outcome]++
	if !p.on {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%s %d/%d: %s", bar(p.done, p.total), p.done, p.total, countsText(p.counts))
		p.drawn = true
		return
	}
	step := max(1, p.total/10)
	if p.done%step == 0 || p.done == p.total {
		fmt.Fprintf(p.w, "%s %d/%d: %s\n", p.name, p.done, p.total, countsText(p.counts))
	}
}

func (p *progress) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a terminal (a character device), where
// a progress bar may redraw itself with \r.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
	for _, k := range []string{api.OutcomeApplied, api.OutcomeDuplicate, api.OutcomeRejected, api.OutcomeFailed, api.OutcomeWould, api.OutcomeWouldNot} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func printBatch(a *app, res api.BatchResult, filters string) error {
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
	fmt.Fprintf(a.stdout, "%s %s on %d of %d records matching %s: %s\n", what, res.Command, len(res.Records), res.Matched, filters, countsText(res.Counts))
	if res.Replayed {
		fmt.Fprintf(a.stdout, "this is the stored result of request %s, which ran before; nothing ran now\n", res.RequestID)
	}
	if !res.DryRun {
		fmt.Fprintf(a.stdout, "request id %s (send it again with --request-id to finish an interrupted run)\n", res.RequestID)
	}
	return batchError(res)
}

// batchError is the failure of a real batch that stopped early or in which
// a record was rejected or failed; nil otherwise, and for a dry run.
func batchError(res api.BatchResult) error {
	if res.DryRun {
		return nil
	}
	if !res.Complete {
		return fmt.Errorf("the batch stopped before the end; run it again with --request-id %s to finish it", res.RequestID)
	}
	if bad := res.Counts[api.OutcomeRejected] + res.Counts[api.OutcomeFailed]; bad > 0 {
		return fmt.Errorf("%d of %d records were not changed (%s); their outcomes say why (`amends show ID` for more)",
			bad, len(res.Records), countsText(map[string]int{api.OutcomeRejected: res.Counts[api.OutcomeRejected], api.OutcomeFailed: res.Counts[api.OutcomeFailed]}))
	}
	return nil
}
