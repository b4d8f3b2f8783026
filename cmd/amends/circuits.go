package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
)

const circuitsLong = `Circuits keep amends from calling a dependency that is down. Every
function has one, CLOSED while its calls succeed. When the last 20 calls in
a row failed (or at least half of 20 or more in 30 s; only failures
classified RECOVERABLE or UNKNOWN count) it opens: the function is not
called, and each of its events, and each replay, gets its record at once
with errorCode CircuitOpen and the last failure's message. After a
cool-down (10 s, doubling after each failed probe up to 30 s) one call is
let through as the probe (HALF_OPEN); 3 probes in a row that succeed close
it, and the scheduler then drains the outage's records, a canary first,
then steps that double while they succeed (amends drains list).

A FUNCTION is CONTEXT.PROCESSOR.NAME. An operator can open a circuit (no
probe closes it then) or close one; both are audited with the operator's
name and --reason, and need --dry-run or --yes.`

func newCircuitsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "circuits",
		Short: "List, open and close the functions' circuits",
		Long:  circuitsLong,
		Args:  noArgs,
	}
	cmd.AddCommand(newCircuitsListCmd(a), newCircuitsShowCmd(a), newCircuitsSetCmd(a, "open"), newCircuitsSetCmd(a, "close"))
	return cmd
}

func newCircuitsListCmd(a *app) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the circuits that ever opened (the others are CLOSED)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			l, err := c.Circuits(cmd.Context())
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.Circuit]{Items: l.Circuits, Invalid: l.Invalid})
			}
			for _, bad := range l.Invalid {
				fmt.Fprintf(a.stderr, "warning: the stored circuit %s does not validate and is ignored: %s\n", bad.Key, bad.Reason)
			}
			if len(l.Circuits) == 0 {
				fmt.Fprintln(a.stdout, "no circuit ever opened: every function is called")
				return nil
			}
			now := a.now()
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "FUNCTION\tSTATE\tSINCE\tNEXT PROBE\tREFUSED\tOPENED\tLAST TRANSITION\tLAST FAILURE")
			for _, ci := range l.Circuits {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", ci.Function, ci.Phase, since(ci, now), nextProbe(ci, now),
					ci.Refused, ci.Opened, lastTransition(ci, now), lastFailure(ci))
			}
			return tw.Flush()
		},
	}
	cf.add(a, cmd)
	return outputs(outputList, cmd)
}

// since is when a circuit that is not closed began its incident, with
// its re-opens (27 re-opens of one outage are one incident, not a fresh
// one), or when a closed one closed.
func since(c api.Circuit, now time.Time) string {
	if c.Phase == string(circuit.Closed) || c.IncidentFrom == 0 {
		return when(c.Since, now)
	}
	s := when(c.IncidentFrom, now)
	if re := c.IncidentOpens - 1; re > 0 {
		s += fmt.Sprintf(" (%d re-opens, the latest %s)", re, when(c.Since, now))
	}
	return s
}

func nextProbe(c api.Circuit, now time.Time) string {
	switch {
	case c.Phase == string(circuit.Open) && c.Forced:
		return "none (opened by an operator)"
	case c.Phase == string(circuit.Open):
		return when(c.Until, now)
	case c.Phase == string(circuit.HalfOpen) && c.Probe == nil:
		return fmt.Sprintf("the next call (%d succeeded, %d failed)", c.Successes, c.ProbeFailures)
	case c.Phase == string(circuit.HalfOpen) && c.Probe.Record != "":
		return fmt.Sprintf("under way: the replay of record %s (%d succeeded, %d failed)", c.Probe.Record, c.Successes, c.ProbeFailures)
	case c.Phase == string(circuit.HalfOpen):
		return fmt.Sprintf("under way (%d succeeded, %d failed)", c.Successes, c.ProbeFailures)
	}
	return "–"
}

func lastTransition(c api.Circuit, now time.Time) string {
	if len(c.Transitions) == 0 {
		return "–"
	}
	t := c.Transitions[len(c.Transitions)-1]
	s := fmt.Sprintf("%s→%s %s %s", t.From, t.To, t.Cause, when(t.At, now))
	if t.Actor != "" {
		s += " by " + t.Actor
	}
	return s
}

func lastFailure(c api.Circuit) string {
	if c.Last == nil {
		return "–"
	}
	return cell(c.Last.Code+": "+c.Last.Message, 80)
}

func newCircuitsShowCmd(a *app) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "show FUNCTION",
		Short: "Show one function's circuit with its transitions",
		Args:  exactlyOneFunction,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			ci, err := c.Circuit(cmd.Context(), args[0])
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, ci)
			}
			now := a.now()
			if !ci.Stored {
				return notFound{fmt.Errorf("no circuit of %s is stored: it never opened, or the name is misspelt (`amends circuits list` lists those that opened)", ci.Function)}
			}
			fmt.Fprintf(a.stdout, "%s: %s since %s; next probe %s; %d calls refused in this incident (%d in all)\n",
				ci.Function, ci.Phase, since(ci, now), nextProbe(ci, now), ci.Refused, ci.RefusedTotal)
			if ci.Last != nil {
				fmt.Fprintf(a.stdout, "last failure %s: %s (%s)\n", ci.Last.Code, cell(ci.Last.Message, 300), when(ci.Last.At, now))
			}
			if len(ci.Transitions) == 0 {
				return nil
			}
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "#\tAT\tFROM\tTO\tCAUSE\tFAILURES\tCALLS\tCOOL-DOWN\tBY\tREASON")
			for _, t := range ci.Transitions {
				by := t.Actor
				if by == "" {
					by = t.Instance
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", t.Seq, when(t.At, now), t.From, t.To, t.Cause, t.Failures, t.Calls,
					time.Duration(t.CoolDownMs)*time.Millisecond, by, t.Reason)
			}
			return tw.Flush()
		},
	}
	cf.add(a, cmd)
	return outputs(outputDocument, cmd)
}

func newCircuitsSetCmd(a *app, verb string) *cobra.Command {
	var (
		cf      clientFlags
		confirm confirmFlags
		why     string
	)
	short := "Open a function's circuit: it is not called until an operator closes it (audited)"
	if verb == "close" {
		short = "Close a function's circuit: it is called again and its outage's records are drained (audited)"
	}
	cmd := &cobra.Command{
		Use:   verb + " FUNCTION --reason WHY (--dry-run | --yes)",
		Short: short,
		Args:  exactlyOneFunction,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := confirm.check("circuits " + verb); err != nil {
				return err
			}
			why = strings.TrimSpace(why)
			if why == "" {
				return usageErrorf("--reason is required: opening and closing circuits is audited")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			call := c.OpenCircuit
			if verb == "close" {
				call = c.CloseCircuit
			}
			ch, err := call(cmd.Context(), args[0], why, confirm.dryRun)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, ch)
			}
			switch {
			case !ch.Changed:
				fmt.Fprintf(a.stdout, "%s's circuit is %s already: nothing changed\n", ch.Circuit.Function, ch.Circuit.Phase)
			case ch.DryRun:
				fmt.Fprintf(a.stdout, "dry run: %s's circuit would become %s\n", ch.Circuit.Function, ch.Circuit.Phase)
			default:
				fmt.Fprintf(a.stdout, "%s's circuit is %s\n", ch.Circuit.Function, ch.Circuit.Phase)
			}
			return nil
		},
	}
	confirm.add(cmd, "", "what")
	cmd.Flags().StringVar(&why, "reason", "", "why, recorded in the circuit's transitions (required)")
	cf.add(a, cmd)
	return outputs(outputDocument, cmd)
}

// exactlyOneFunction accepts one CONTEXT.PROCESSOR.NAME.
func exactlyOneFunction(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("%s takes one function, CONTEXT.PROCESSOR.NAME; list the circuits with `amends circuits list`", cmd.CommandPath())
	}
	if _, err := circuit.ParseFunction(args[0]); err != nil {
		return usageErrorf("%s", strings.TrimSuffix(err.Error(), ": "+circuit.ErrInvalidFunction.Error()))
	}
	return nil
}
