package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

func newSummaryCmd(a *app) *cobra.Command {
	var (
		cf clientFlags
		ff filterFlags
		by string
	)
	cmd := &cobra.Command{
		Use:   "summary",
		Short: "Summarise failures by function and error code",
		Long:  "Summary groups the records by failing function and error code, largest group first, with how many are still retryable, exhausted and prepared, and when the open failures happened. Start here in an incident.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params, err := ff.params()
			if err != nil {
				return err
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			filters := ff.describe(params)
			if by != "" && by != "fingerprint" {
				return usageErrorf("--by must be fingerprint, got %s", quoteShort(by))
			}
			summarize := c.Summary
			if by == "fingerprint" {
				summarize = c.SummaryByFingerprint
			}
			s, err := summarize(cmd.Context(), ff.filter(params))
			if err != nil {
				return apiError(cmd, "", err)
			}
			s = withEveryView(s)
			if cf.output == "json" {
				return printJSON(a.stdout, s)
			}
			if by == "fingerprint" {
				return printFingerprints(a, s)
			}
			return printSummary(a, s, filters)
		},
	}
	cf.add(a, cmd)
	ff.add(cmd)
	cmd.Flags().StringVar(&by, "by", "", "fingerprint: group the records by failure fingerprint, with a sample message, first and last seen and counts by status")
	return outputs(outputDocument, cmd)
}

// withEveryView gives s a count, maybe 0, for every view, and empty lists
// rather than null.
func withEveryView(s api.Summary) api.Summary {
	views := make(map[aggregate.View]int, len(aggregate.Views))
	for _, v := range aggregate.Views {
		views[v] = s.Views[v]
	}
	s.Views = views
	if s.Groups == nil {
		s.Groups = []api.FailureGroup{}
	}
	if s.ByStatus == nil {
		s.ByStatus = []api.StatusCount{}
	}
	return s
}

func printSummary(a *app, s api.Summary, filters string) error {
	now := a.now()
	tw := newTable(a.stdout)
	// UNDER LIMIT is the API's retryable (Wow's isRetryable): open records
	// below their retry limit, UNRECOVERABLE ones too, which the scheduler
	// never retries; the column is named for what it counts.
	fmt.Fprintln(tw, "FUNCTION\tERROR\tTOTAL\tUNDER LIMIT\tOUT OF RETRIES\tREPLAYING\tOLDEST OPEN\tNEWEST OPEN")
	for _, g := range s.Groups {
		fmt.Fprintf(tw, "%s.%s@%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", g.Processor, g.Function, g.FunctionContext, g.ErrorCode,
			g.Total, g.Retryable, g.Exhausted, g.Prepared, when(g.OldestFailureAt, now), when(g.NewestFailureAt, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n%d records", s.Total)
	if filters != "" {
		fmt.Fprintf(a.stdout, " matching %s", filters)
	}
	fmt.Fprint(a.stdout, ";")
	for _, v := range aggregate.Views {
		fmt.Fprintf(a.stdout, " %s %d", v, s.Views[v])
	}
	fmt.Fprintln(a.stdout)
	printRemoved(a, s.Removed)
	if len(s.Groups) > 0 {
		fmt.Fprintln(a.stdout, "UNDER LIMIT counts open records below their maxRetries, UNRECOVERABLE ones included; the scheduler retries only those of view to-retry.")
	}
	return nil
}
