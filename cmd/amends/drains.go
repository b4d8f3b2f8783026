package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
)

const drainsLong = `Drains shows the recovery drains: when a function's circuit opens, its
records wait (waiting); once it closes, the scheduler prepares the records
the outage left (those with errorCode CircuitOpen first, then those that
failed within it), a canary first, then steps that double while at least
half of the last one's refused records succeeded, up to the drain's rate
(canary, steps); a failing step halves it, a failing canary waits a
cool-down before the next; the drain never opens the circuit. The progress is kept
in a KV bucket and survives a restart of the scheduler.`

func newDrainsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drains",
		Short: "Show the recovery drains after outages",
		Long:  drainsLong,
		Args:  noArgs,
	}
	cmd.AddCommand(newDrainsListCmd(a))
	return cmd
}

func newDrainsListCmd(a *app) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the drains by function, with their progress",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			l, err := c.Drains(cmd.Context())
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.Drain]{Items: l.Drains, Invalid: l.Invalid})
			}
			for _, bad := range l.Invalid {
				fmt.Fprintf(a.stderr, "warning: a stored drain does not validate and is started again from its circuit: %s\n", bad.Reason)
			}
			if len(l.Drains) == 0 {
				fmt.Fprintln(a.stdout, "no drain: no circuit opened")
				return nil
			}
			now := a.now()
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "FUNCTION\tPHASE\tOUTAGE\tSTEPS\tRELEASED\tSUCCEEDED\tFAILED\tIN FLIGHT\tNEXT STEP\tRATE/S\tPROBES\tUPDATED\tNOTE")
			for _, d := range l.Drains {
				outage := when(d.From, now) + " – "
				if d.To != 0 {
					outage += when(d.To, now)
				} else {
					outage += "now"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%d\t%s\t%s\n", d.Function, d.Phase, outage, d.Steps, d.Released, d.Succeeded,
					d.Failed, d.InFlight, d.Size, d.Rate, d.Probes, when(d.UpdatedAt, now), cell(d.Note, 120))
			}
			return tw.Flush()
		},
	}
	cf.add(a, cmd)
	return outputs(outputList, cmd)
}
