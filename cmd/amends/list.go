package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/projection"
)

const listLong = `List shows ExecutionFailed records, newest failure last, one page at a time.

Filter with the flags (all must match), or --view for one of the operator
views: to-retry (what a prepare would accept now), executing (a replay is
running), next-retry (due: what the scheduler prepares next), non-retryable
(out of retries), succeeded, unrecoverable. --all follows the pages to the
end; otherwise the last line gives the --cursor of the next page.

Times show how long ago and when (UTC).`

func newListCmd(a *app) *cobra.Command {
	var (
		cf     clientFlags
		ff     filterFlags
		sort   string
		desc   bool
		limit  int
		cursor string
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List ExecutionFailed records",
		Long:  listLong,
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
			if sort != "" {
				params.Set("sort", sort)
			}
			if desc {
				params.Set("order", "desc")
			}
			params.Set("limit", strconv.Itoa(limit))
			if cursor != "" {
				params.Set("cursor", cursor)
			}
			var items []projection.Item
			next := ""
			for {
				page, err := c.List(cmd.Context(), ff.view, params)
				if err != nil {
					return apiError("", err)
				}
				items = append(items, page.Items...)
				next = page.Next
				if !all || next == "" {
					break
				}
				params.Set("cursor", next)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, projection.Page{Items: items, Next: next})
			}
			return printItems(a, items, next)
		},
	}
	cf.add(cmd)
	ff.add(cmd)
	fs := cmd.Flags()
	fs.StringVar(&sort, "sort", "", "order by executeAt (default), nextRetryAt or retries")
	fs.BoolVar(&desc, "desc", false, "largest first")
	fs.IntVar(&limit, "limit", 50, "records per page, 1 to 1000")
	fs.StringVar(&cursor, "cursor", "", "continue after the page that printed it")
	fs.BoolVar(&all, "all", false, "print every page")
	annotateEnv(fs)
	return cmd
}

func printItems(a *app, items []projection.Item, next string) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tSTATUS\tRECOVERABLE\tFUNCTION\tRETRIES\tERROR\tLAST OUTCOME\tNEXT RETRY")
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s.%s@%s\t%d/%d\t%s\t%s\t%s\n", it.ID, it.Status, it.Recoverable,
			it.Function.ProcessorName, it.Function.Name, it.Function.ContextName, it.Retries, it.MaxRetries,
			it.ErrorCode, when(it.ExecuteAt, now), when(it.NextRetryAt, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(items) == 0 {
		fmt.Fprintln(a.stdout, "no records match")
	}
	if next != "" {
		fmt.Fprintf(a.stdout, "more: --cursor %s (or --all)\n", next)
	}
	return nil
}
