package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

func newHistoryCmd(a *app) *cobra.Command {
	var (
		cf       clientFlags
		attempts bool
	)
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Show what happened to a record: its attempts, then its commands, newest first",
		Long: "History shows a record's attempts as a timeline, oldest first: the first failure and each replay, with when it started, how long it ran, " +
			"the instance and build that ran it, its trace id and error, and FINAL where the record had no automatic retry left. " +
			"Then it lists every command applied to the record, newest first, with who sent it, why, and the events it produced.\n\n" +
			"With -o json it prints the commands as before; add --attempts for the timeline alone (GET /api/v1/records/ID/attempts).",
		Args: exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := cf.record(cmd, args)
			if err != nil {
				return err
			}
			now := a.now()
			if attempts || cf.output != "json" {
				at, err := c.Attempts(cmd.Context(), id)
				if err != nil {
					return apiError(cmd, id, err)
				}
				if cf.output == "json" {
					return printJSON(a.stdout, at)
				}
				if err := printTimeline(a.stdout, at, now); err != nil || attempts {
					return err
				}
				fmt.Fprintln(a.stdout)
			}
			h, err := c.History(cmd.Context(), id)
			if err != nil {
				return apiError(cmd, id, err)
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.HistoryEntry]{Items: h})
			}
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
	cmd.Flags().BoolVar(&attempts, "attempts", false, "show only the attempt timeline")
	cf.add(a, cmd)
	return outputs(outputList, takesRecordID(cmd))
}

// printTimeline writes the attempts, oldest first, one line each.
func printTimeline(w io.Writer, at api.Attempts, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ATTEMPT\tOUTCOME\tSTARTED\tDURATION\tINSTANCE\tBUILD\tTRACE\tERROR")
	for _, e := range at.Timeline {
		if e.Kind == aggregate.EntryFinalFailure {
			fmt.Fprintf(tw, "%d\tFINAL\t%s\t-\t-\t-\t-\t%s: %s\n", e.Attempt, when(e.EndedAt, now), e.Reason, e.Detail)
			continue
		}
		start := e.StartedAt
		if start == 0 {
			start = e.EndedAt // unknown start: show when it ended
		}
		if start == 0 {
			start = e.PreparedAt
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Attempt, e.Outcome, when(start, now), duration(e), orDash(e.Instance), orDash(e.Build), orDash(e.TraceID), errorText(e.Error))
	}
	if len(at.Timeline) == 0 {
		fmt.Fprintln(tw, "-\t-\t-\t-\t-\t-\t-\t-")
	}
	return tw.Flush()
}

func duration(e aggregate.TimelineEntry) string {
	if e.StartedAt == 0 || e.EndedAt == 0 {
		return "-"
	}
	return (time.Duration(e.DurationMs) * time.Millisecond).String()
}

// errorText is "code: message", cut to one short line.
func errorText(e *aggregate.ErrorDetails) string {
	if e == nil {
		return "-"
	}
	s := e.ErrorCode
	if e.ErrorMsg != "" {
		s += ": " + e.ErrorMsg
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
