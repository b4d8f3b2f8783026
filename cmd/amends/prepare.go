package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

const prepareLong = `Prepare asks for a replay of a failed execution now: the record becomes
PREPARED and the service that owns the function replays the original event
to that function alone. It is accepted for a FAILED record, or a PREPARED
one whose attempt timed out, while retries remain (see force-prepare).

While the function's circuit is not closed the prepare is refused (its
replay would be refused and cost a retry; the recovery drain prepares the
record once the circuit closes): --probe makes the replay the circuit's
probe instead.

With filters instead of an id it prepares every matching record: --dry-run
shows what would happen, --yes does it, paced by --rate. A run in which any
record was rejected or failed exits 1. --yes and the filters are never taken
from the environment.`

func newPrepareCmd(a *app) *cobra.Command {
	return newPrepareLikeCmd(a, "prepare", api.CommandPrepare, false,
		"Prepare the replay of a failed execution (or of every matching one)", prepareLong)
}

const forcePrepareLong = `Force-prepare asks for a replay beyond the retry limit: accepted for a
FAILED record, or a PREPARED one whose attempt timed out, whatever its retry
count; never for a SUCCEEDED record. --reason is required: it is recorded in
the audit trail. Make sure the function is idempotent before replaying.
While the function's circuit is not closed it is refused, as prepare is,
unless --probe makes the replay the circuit's probe.

With filters instead of an id it force-prepares every matching record:
--dry-run shows what would happen, --yes does it, paced by --rate. A run in
which any record was rejected or failed exits 1.`

func newForcePrepareCmd(a *app) *cobra.Command {
	return newPrepareLikeCmd(a, "force-prepare", api.CommandForcePrepare, true,
		"Prepare a replay beyond the retry limit (or of every matching record)", forcePrepareLong)
}

func newPrepareLikeCmd(a *app, use string, name api.Command, reasonRequired bool, short, long string) *cobra.Command {
	var (
		f     commandFlags
		ff    filterFlags
		bf    batchFlags
		probe bool
	)
	cmd := &cobra.Command{
		Use:   use + " [ID]",
		Short: short,
		Long:  long,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return nil
			case 1:
				return checkID(args[0])
			}
			return usageErrorf("%s takes one record id, or filters for a batch; got %d arguments", cmd.CommandPath(), len(args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			params, err := ff.params()
			if err != nil {
				return err
			}
			filtered := ff.active(params)
			if reasonRequired && strings.TrimSpace(f.reason) == "" && !bf.dryRun {
				return usageErrorf("%s needs --reason: it is recorded in the record's history", use)
			}
			switch {
			case len(args) == 1 && filtered:
				return usageErrorf("give a record id or filters, not both")
			case len(args) == 1:
				for _, name := range []string{"rate", "limit", "request-id"} {
					if cmd.Flags().Changed(name) {
						return usageErrorf("--%s is for batches over filters; a single record does not take it", name)
					}
				}
				var decide aggregate.Command = aggregate.PrepareCompensation{}
				if name == api.CommandForcePrepare {
					decide = aggregate.ForcePrepareCompensation{}
				}
				f.confirmFlags = bf.confirmFlags
				return f.run(cmd, a, args[0], one{name: name, decide: decide, dryRun: bf.dryRun, probe: probe,
					send: func(ctx context.Context, c *client.Client, id string, o client.CommandOptions) (api.CommandResponse, error) {
						o.Probe = probe
						if name == api.CommandForcePrepare {
							return c.ForcePrepare(ctx, id, o.Reason, o)
						}
						return c.Prepare(ctx, id, o)
					}})
			case !filtered:
				return usageErrorf("%s needs a record id, or filters (--filter key=value, --view, --processor, ...) for a batch", use)
			case probe:
				return usageErrorf("--probe is for one record: a batch never probes a circuit (its records whose circuit is not closed are refused)")
			}
			return runBatch(cmd, a, &f, &ff, &bf, name, params)
		},
	}
	f.add(a, cmd, reasonRequired)
	ff.add(cmd)
	bf.add(cmd)
	cmd.Flags().BoolVar(&probe, "probe", false, "make the replay the probe of the function's circuit when it is not closed (without it such a record is refused: its replay would cost a retry)")
	return outputs(outputDocument, takesRecordID(cmd))
}
