package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/eventstore"
)

// commandFlags are the flags every single-record command shares.
type commandFlags struct {
	clientFlags
	confirmFlags
	reason string
	key    string
}

// addConfirm adds --dry-run and --yes to a single-record command: the dry
// run says what the record would do with the command, sending nothing;
// --yes is accepted (a single record's change is audited in its history,
// so it needs no confirmation) so that scripts may say it everywhere.
func (f *commandFlags) addConfirm(cmd *cobra.Command) {
	f.confirmFlags.add(cmd, "", "whether the record would accept it now and what it")
}

// checkConfirm refuses --dry-run with --yes.
func (f *commandFlags) checkConfirm() error {
	if f.dryRun && f.yes {
		return usageErrorf("give --dry-run or --yes, not both")
	}
	return nil
}

func (f *commandFlags) add(a *app, cmd *cobra.Command, reasonRequired bool) {
	f.clientFlags.add(a, cmd)
	usage := "why, recorded in the record's history"
	if reasonRequired {
		usage += " (required)"
	}
	cmd.Flags().StringVar(&f.reason, "reason", "", usage)
	cmd.Flags().StringVar(&f.key, "idempotency-key", "", "run the command once even if sent again with this key (default: a new key)")
}

// check validates --idempotency-key as a usage error (--reason is checked
// with every operator-text flag, by checkOperatorText).
func (f *commandFlags) check() error {
	if len(f.key) > eventstore.MaxIDLength {
		return usageErrorf("--idempotency-key is %d bytes, over the limit of %d", len(f.key), eventstore.MaxIDLength)
	}
	return nil
}

// send runs one command on record id (resolved from a prefix) with a
// client; opts carry --reason and the idempotency key.
type send func(ctx context.Context, c *client.Client, id string, opts client.CommandOptions) (api.CommandResponse, error)

// one is a single-record command as run sends it: its wire name, the
// command as the record's aggregate decides it (for a dry run), whether
// it is a dry run (--dry-run), and how to send it.
type one struct {
	name   api.Command
	decide aggregate.Command
	dryRun bool
	// probe is prepare's --probe: the replay is the circuit's probe.
	probe bool
	send  send
}

// run sends one command to the record id names (an id or a unique prefix
// of one) and prints the record after it; a dry run prints instead what
// the record's aggregate would do with it now (dryRunOne).
func (f *commandFlags) run(cmd *cobra.Command, a *app, id string, o one) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if err := f.checkConfirm(); err != nil {
		return err
	}
	c, err := f.client(0)
	if err != nil {
		return err
	}
	arg := id
	if id, err = resolveID(cmd.Context(), c, id); err != nil {
		return apiError(cmd, arg, err)
	}
	if o.dryRun {
		return f.dryRunOne(cmd, a, c, id, o)
	}
	key := f.key
	if key == "" {
		key = uuid.NewString()
	}
	res, err := o.send(cmd.Context(), c, id, client.CommandOptions{Reason: f.reason, IdempotencyKey: key})
	if err != nil {
		return apiError(cmd, id, err)
	}
	if f.output == "json" {
		return printJSON(a.stdout, res)
	}
	printCommandResult(a, string(o.name), res)
	return nil
}

// DryRun is what a single record's dry run prints with -o json: whether
// the record would accept the command now, the events it would append, or
// why it would refuse it.
type DryRun struct {
	ID       string   `json:"id"`
	Version  uint64   `json:"version"`
	Command  string   `json:"command"`
	Accepted bool     `json:"accepted"`
	Events   []string `json:"events,omitempty"`
	Refusal  string   `json:"refusal,omitempty"`
	DryRun   bool     `json:"dryRun"`
}

// dryRunOne reads the record and decides o's command on it as its
// aggregate would now (aggregate.Decide, the server's own decision), and,
// for a prepare, whether its function's circuit would refuse the replay;
// it sends nothing. A refusal exits 1, as the command itself would.
func (f *commandFlags) dryRunOne(cmd *cobra.Command, a *app, c *client.Client, id string, o one) error {
	v, err := c.Get(cmd.Context(), id)
	if err != nil {
		return apiError(cmd, id, err)
	}
	out := DryRun{ID: id, Version: v.Version, Command: string(o.name), DryRun: true}
	events, err := aggregate.Decide(v.State, o.decide, a.now())
	if err == nil && (o.name == api.CommandPrepare || o.name == api.CommandForcePrepare) && !o.probe {
		fn := circuit.Of(v.State.Function)
		if ci, cerr := c.Circuit(cmd.Context(), fn.String()); cerr == nil && ci.Phase != string(circuit.Closed) {
			err = fmt.Errorf("the circuit of %s is %s: the replay would be refused and cost a retry; wait for the recovery drain, or give --probe to make it the circuit's probe", fn, ci.Phase)
		}
	}
	if err != nil {
		out.Refusal = err.Error()
	} else {
		out.Accepted = true
		for _, e := range events {
			out.Events = append(out.Events, e.EventName())
		}
	}
	if f.output == "json" {
		if err := printJSON(a.stdout, out); err != nil {
			return err
		}
	} else if out.Accepted {
		fmt.Fprintf(a.stdout, "dry run: %s on %s (version %d) would be accepted and append %s; nothing was sent\n", o.name, id, v.Version, strings.Join(out.Events, ", "))
	} else {
		fmt.Fprintf(a.stdout, "dry run: %s on %s (version %d) would be refused: %s\n", o.name, id, v.Version, out.Refusal)
	}
	if !out.Accepted {
		return fmt.Errorf("dry run: %s on %s would be refused", o.name, id)
	}
	return nil
}

func printCommandResult(a *app, name string, res api.CommandResponse) {
	s, now := res.State, a.now()
	verb := name
	if res.Duplicate {
		verb += " (already applied with this idempotency key; nothing changed)"
	}
	fmt.Fprintf(a.stdout, "%s: %s\n", res.ID, verb)
	fmt.Fprintf(a.stdout, "  status %s, %s, version %d\n", s.Status, s.Recoverable, res.Version)
	fmt.Fprintf(a.stdout, "  retries %d of %d; times out %s; next retry %s\n", s.RetryState.Retries, s.RetrySpec.MaxRetries,
		when(s.RetryState.TimeoutAt, now), nextRetry(&s, now))
	fmt.Fprintf(a.stdout, "  function %s.%s@%s (%s)\n", s.Function.ProcessorName, s.Function.Name, s.Function.ContextName, s.Function.FunctionKind)
	fmt.Fprintf(a.stdout, "see it with `amends history %s`\n", res.ID)
}
