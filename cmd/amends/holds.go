package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/processor"
)

const holdsLong = `Holds shows and steers the holds of Ordered functions. Once a final
failure of an Ordered function on an event of an aggregate is recorded, the
function is not given the aggregate's later events: they are held behind
that record (the head), and given to it in version order once the head
succeeds. Other functions and aggregates are not held.

A hold's key is <context>.<processor>.<function>.<aggregateType>.<id in
base64url>, as holds list prints it.`

func newHoldsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "holds", Short: "List, release and skip the holds of Ordered functions", Long: holdsLong, Args: noArgs}
	cmd.AddCommand(newHoldsListCmd(a), newHoldsReleaseCmd(a), newHoldsSkipCmd(a))
	return cmd
}

func newHoldsListCmd(a *app) *cobra.Command {
	var (
		cf    clientFlags
		q     api.HoldQuery
		fnArg string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List holds: per head record, how many events are held, their versions and since when",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !bounds.Within(q.Limit, 1, processor.MaxHoldList) {
				return usageErrorf("--limit must be from 1 to %d, got %d", processor.MaxHoldList, q.Limit)
			}
			if fnArg != "" {
				p, n, ok := strings.Cut(fnArg, ".")
				if !ok || p == "" || n == "" {
					return usageErrorf("--function must be PROCESSOR.NAME, got %s", quoteShort(fnArg))
				}
				if q.Context == "" {
					return usageErrorf("--function needs --context")
				}
				q.Processor, q.Function = p, n
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			if err := resolveRecord(cmd, c, &q.Record); err != nil {
				return err
			}
			page, err := c.Holds(cmd.Context(), q)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.HoldSummary]{Items: page.Holds, More: page.More})
			}
			return printHolds(a, page)
		},
	}
	cf.add(a, cmd)
	fs := cmd.Flags()
	fs.StringVar(&q.Context, "context", "", "only holds of this bounded context")
	fs.StringVar(&fnArg, "function", "", "only holds of this function, PROCESSOR.NAME (with --context)")
	fs.StringVar(&q.Record, "record", "", "only the hold whose head is this record (its id or a unique prefix)")
	fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many holds, 1 to %d", processor.MaxHoldList))
	return takesRecordID(outputs(outputList, cmd))
}

func printHolds(a *app, page api.HoldPage) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "KEY\tFUNCTION\tAGGREGATE\tHEAD RECORD\tHEAD V\tHELD\tVERSIONS\tSINCE\tRELEASING")
	for _, h := range page.Holds {
		versions := "-"
		if h.Held > 0 {
			versions = fmt.Sprintf("%d..%d", h.OldestVersion, h.NewestVersion)
		}
		fmt.Fprintf(tw, "%s\t%s.%s\t%s/%s\t%s\t%d\t%d\t%s\t%s\t%t\n", cell(h.Key, 200), h.Processor, h.Function, h.AggregateType, cell(h.AggregateID, 64),
			h.HeadRecord, h.HeadVersion, h.Held, versions, when(h.Since, now), h.Releasing)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range page.Holds {
		if h.Recovered != "" {
			fmt.Fprintf(a.stdout, "%s is a recovered hold (its stored value did not validate: %s); it holds the aggregate's events: check them, then amends holds release %s\n",
				cell(h.Key, 200), cell(h.Recovered, 200), cell(h.Key, 200))
		}
	}
	switch {
	case len(page.Holds) == 0:
		fmt.Fprintln(a.stdout, "nothing held")
	case page.More:
		fmt.Fprintln(a.stdout, "more holds match: narrow with --context, --function or raise --limit")
	}
	return nil
}

const holdsReleaseLong = `Release gives a hold's events to its function in order without
replaying the head: use it when the head's failure was fixed by hand. The
head record is marked resolved in its own history, with you as actor and
--reason, and is not replayed. Like every bulk command it needs --dry-run,
which shows what would be done, or --yes.`

func newHoldsReleaseCmd(a *app) *cobra.Command {
	var (
		cf      clientFlags
		reason  string
		confirm confirmFlags
	)
	cmd := &cobra.Command{
		Use:   "release KEY",
		Short: "Release a hold without replaying its head (its record is marked resolved)",
		Long:  holdsReleaseLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := confirm.check("holds release"); err != nil {
				return err
			}
			dry := confirm.dryRun
			if strings.TrimSpace(reason) == "" {
				return usageErrorf("holds release needs --reason: it is kept in the head record's history")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			plan, err := c.ReleaseHold(cmd.Context(), args[0], reason, dry)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, plan)
			}
			verb := "released"
			if dry {
				verb = "would release"
			}
			cmds := "nothing (the head record is " + orNone(string(plan.HeadStatus)) + ")"
			if len(plan.Commands) > 0 {
				cmds = strings.Join(plan.Commands, " then ")
			}
			fmt.Fprintf(a.stdout, "%s %s: %d held events in order; head record %s: %s\n", verb, plan.Hold.Key(), len(plan.Hold.Held), plan.Hold.Head.Record, cmds)
			return nil
		},
	}
	cf.add(a, cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (required, kept with the release)")
	confirm.add(cmd, "", "what")
	return outputs(outputDocument, cmd)
}

func newHoldsSkipCmd(a *app) *cobra.Command {
	var (
		cf      clientFlags
		reason  string
		confirm confirmFlags
	)
	cmd := &cobra.Command{
		Use:   "skip KEY EVENT_ID --reason WHY (--dry-run | --yes)",
		Short: "Skip one held event: the function never gets it from this hold (audited)",
		Long: `Skip drops one held event from a hold: the function never gets it from
this hold. The skip is kept on the hold with you as actor and --reason. Like
holds release it needs --dry-run, which shows what would be done, or --yes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := confirm.check("holds skip"); err != nil {
				return err
			}
			dry := confirm.dryRun
			if strings.TrimSpace(reason) == "" {
				return usageErrorf("holds skip needs --reason: it is kept on the hold")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			ev, err := heldEventArg(cmd, c, args[0], args[1])
			if err != nil {
				return err
			}
			h, err := c.SkipHeld(cmd.Context(), args[0], ev, reason, dry)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, h)
			}
			verb := "skipped"
			if dry {
				verb = "would skip"
			}
			fmt.Fprintf(a.stdout, "%s event %s of %s; %d events stay held\n", verb, ev, h.Key(), len(h.Held))
			return nil
		},
	}
	cf.add(a, cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (required, kept on the hold)")
	confirm.add(cmd, "", "what")
	return takesID(idHeldEvent, outputs(outputDocument, cmd))
}

func orNone(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

// showHolds prints, for amends show, the events held behind record s
// (Ordered functions); nothing when none are or the server keeps no holds.
func showHolds(cmd *cobra.Command, a *app, c *client.Client, s *aggregate.State) {
	page, err := c.Holds(cmd.Context(), api.HoldQuery{Record: s.ID, Context: s.Function.ContextName,
		Processor: s.Function.ProcessorName, Function: s.Function.Name, Limit: 1})
	if err != nil || len(page.Holds) == 0 {
		return
	}
	h := page.Holds[0]
	versions := ""
	if h.Held > 0 {
		versions = fmt.Sprintf(" (versions %d..%d)", h.OldestVersion, h.NewestVersion)
	}
	state := "held"
	if h.Releasing {
		state = "being released"
	}
	fmt.Fprintf(a.stdout, "\nholds: %d later events of %s/%s %s behind this record%s since %s; key %s (amends holds release|skip)\n",
		h.Held, h.AggregateType, h.AggregateID, state, versions, when(h.Since, a.now()), h.Key)
}
