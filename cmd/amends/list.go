package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
)

const listLong = `List shows ExecutionFailed records, newest failure last, one page at a time.

Filter with the flags (all must match), or --view for one of the operator
views: to-retry (what a prepare would accept now), executing (a replay is
running), next-retry (due: what the scheduler prepares next), non-retryable
(out of retries), succeeded, unrecoverable. --all follows the pages to the
end; otherwise the last line gives the --cursor of the next page.

Times show how long ago and when (UTC); NEXT RETRY is "-" for a record the
scheduler will not retry (succeeded, out of retries or unrecoverable).`

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
			params, err := ff.params()
			if err != nil {
				return err
			}
			if !bounds.Within(limit, 1, api.MaxLimit) {
				return usageErrorf("--limit must be from 1 to %d, got %d", api.MaxLimit, limit)
			}
			if sort != "" && !slices.Contains(api.SortFields, api.SortField(sort)) {
				return usageErrorf("--sort must be one of %s, got %s", sortNames(), quoteShort(sort))
			}
			if len(cursor) > maxCursor {
				return usageErrorf("--cursor is %d bytes, over the limit of %d; give the cursor a list printed", len(cursor), maxCursor)
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			filters := ff.describe(params)
			q := api.Query{Filter: ff.filter(params), Sort: api.Sort{Field: api.SortField(sort), Desc: desc}, Limit: limit, Cursor: cursor}
			items := []api.Item{}
			next := ""
			for {
				page, err := c.List(cmd.Context(), q)
				if err != nil {
					return apiError(cmd, "", err)
				}
				items = append(items, page.Items...)
				next = page.Next
				if !all || next == "" {
					break
				}
				q.Cursor = next
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.Item]{Items: items, Next: next})
			}
			// The count of every matching record, not only this page's; a
			// server that cannot count now still gets its page printed.
			total, err := c.Count(cmd.Context(), q.Filter)
			if err != nil {
				total = -1
			}
			return printItems(a, items, next, filters, total)
		},
	}
	cf.add(a, cmd)
	ff.add(cmd)
	fs := cmd.Flags()
	fs.StringVar(&sort, "sort", "", "order by executeAt (default), nextRetryAt or retries")
	fs.BoolVar(&desc, "desc", false, "largest first")
	fs.IntVar(&limit, "limit", 50, fmt.Sprintf("records per page, 1 to %d", api.MaxLimit))
	fs.StringVar(&cursor, "cursor", "", "continue after the page that printed it")
	fs.BoolVar(&all, "all", false, "print every page")
	return outputs(outputList, cmd)
}

// maxCursor bounds a --cursor: the server's cursors are far shorter.
const maxCursor = 1024

func sortNames() string {
	names := make([]string, len(api.SortFields))
	for i, f := range api.SortFields {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// printItems prints a page; filters names the active filters ("" if none).
func printItems(a *app, items []api.Item, next, filters string, total int) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ID\tSTATUS\tRECOVERABLE\tFUNCTION\tAGGREGATE\tRETRIES\tERROR\tLAST OUTCOME\tNEXT RETRY")
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s.%s@%s\t%s\t%d/%d\t%s\t%s\t%s\n", it.ID, it.Status, it.Recoverable,
			it.Function.ProcessorName, it.Function.Name, it.Function.ContextName,
			cell(it.Aggregate.ContextName+"."+it.Aggregate.AggregateName+"/"+it.Aggregate.AggregateID, 48), it.Retries, it.MaxRetries,
			it.ErrorCode, when(it.ExecuteAt, now), nextRetry(itemState(it), now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	matching := ""
	if filters != "" {
		matching = ", matching " + filters
	}
	switch {
	case len(items) == 0 && strings.Contains(filters, "view="+string(aggregate.ViewNextRetry)):
		fmt.Fprintf(a.stdout, "no records match %s: none is due now; the records waiting for a later retry are in --view to-retry (NEXT RETRY says when)\n", filters)
	case len(items) == 0 && filters != "":
		fmt.Fprintf(a.stdout, "no records match %s\n", filters)
	case len(items) == 0:
		fmt.Fprintln(a.stdout, "no records match")
	case total >= len(items):
		fmt.Fprintf(a.stdout, "%d of %d records shown%s\n", len(items), total, matching)
	default:
		fmt.Fprintf(a.stdout, "%d records shown%s\n", len(items), matching)
	}
	if next != "" {
		fmt.Fprintf(a.stdout, "more: --cursor %s (or --all)\n", next)
	}
	return nil
}
