package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
)

func newSummaryCmd(a *app) *cobra.Command {
	var (
		cf clientFlags
		ff filterFlags
	)
	cmd := &cobra.Command{
		Use:   "summary",
		Short: "Summarise failures by function and error code",
		Long:  "Summary groups the records by failing function and error code, largest group first, with how many are still retryable, exhausted and prepared, and when the open failures happened. Start here in an incident.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			params, err := ff.params()
			if err != nil {
				return err
			}
			if ff.view != "" {
				params.Set("view", ff.view)
			}
			s, err := c.Summary(cmd.Context(), params)
			if err != nil {
				return apiError("", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, s)
			}
			now := a.now()
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "FUNCTION\tERROR\tTOTAL\tRETRYABLE\tEXHAUSTED\tPREPARED\tOLDEST OPEN\tNEWEST OPEN")
			for _, g := range s.Groups {
				fmt.Fprintf(tw, "%s.%s@%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", g.Processor, g.Function, g.FunctionContext, g.ErrorCode,
					g.Total, g.Retryable, g.Exhausted, g.Prepared, when(g.OldestFailureAt, now), when(g.NewestFailureAt, now))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "\n%d records;", s.Total)
			for _, v := range aggregate.Views {
				fmt.Fprintf(a.stdout, " %s %d", v, s.Views[v])
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
	cf.add(cmd)
	ff.add(cmd)
	annotateEnv(cmd.Flags())
	return cmd
}
