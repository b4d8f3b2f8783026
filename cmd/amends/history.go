package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/server"
)

func newHistoryCmd(a *app) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Show what happened to a record, newest first",
		Long:  "History lists every command applied to a record, newest first, with who sent it, why, and the events it produced.",
		Args:  exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			h, err := c.History(cmd.Context(), args[0])
			if err != nil {
				return apiError(cmd, args[0], err)
			}
			if cf.output == "json" {
				if h == nil {
					h = []server.HistoryEntry{}
				}
				return printJSON(a.stdout, h)
			}
			now := a.now()
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "VERSION\tWHEN\tACTOR\tCOMMAND\tEVENTS\tREASON")
			for _, e := range h {
				var names []string
				for _, ev := range e.Events {
					names = append(names, ev.Name)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Version, when(e.CreateTime, now), orDash(e.Actor), orDash(e.Command), strings.Join(names, ","), orDash(e.Reason))
			}
			return tw.Flush()
		},
	}
	cf.add(a, cmd)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
