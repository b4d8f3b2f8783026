package main

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/eventstore"
)

// commandFlags are the flags every single-record command shares.
type commandFlags struct {
	clientFlags
	reason string
	key    string
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

// send runs one command on a client; opts carry --reason and the
// idempotency key.
type send func(ctx context.Context, c *client.Client, opts client.CommandOptions) (api.CommandResponse, error)

// run sends one command and prints the record after it.
func (f *commandFlags) run(cmd *cobra.Command, a *app, id string, name api.Command, send send) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	c, err := f.client(0)
	if err != nil {
		return err
	}
	key := f.key
	if key == "" {
		key = uuid.NewString()
	}
	res, err := send(cmd.Context(), c, client.CommandOptions{Reason: f.reason, IdempotencyKey: key})
	if err != nil {
		return apiError(cmd, id, err)
	}
	if f.output == "json" {
		return printJSON(a.stdout, res)
	}
	printCommandResult(a, string(name), res)
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
