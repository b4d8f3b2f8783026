package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

const markRecoverableLong = `Mark-recoverable reclassifies a record's failure: RECOVERABLE or UNKNOWN
records are retried by the scheduler, UNRECOVERABLE ones are left to
operators. Check the error and any side effects before changing it. The
next failed replay classifies the failure again.`

func newMarkRecoverableCmd(a *app) *cobra.Command {
	var f commandFlags
	cmd := &cobra.Command{
		Use:   "mark-recoverable ID RECOVERABLE|UNRECOVERABLE|UNKNOWN",
		Short: "Reclassify a record's failure",
		Long:  markRecoverableLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("mark-recoverable takes a record id and RECOVERABLE, UNRECOVERABLE or UNKNOWN")
			}
			if err := checkEnum(args[1], aggregate.Recoverabilities); err != nil {
				return usageErrorf("the classification %v", err)
			}
			return checkID(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _ := aggregate.ParseRecoverability(args[1])
			return f.run(cmd, a, args[0], one{name: api.CommandMarkRecoverable, dryRun: f.dryRun, decide: aggregate.MarkRecoverable{Recoverable: r},
				send: func(ctx context.Context, c *client.Client, id string, o client.CommandOptions) (api.CommandResponse, error) {
					return c.MarkRecoverable(ctx, id, r, o)
				}})
		},
	}
	f.add(a, cmd, false)
	f.addConfirm(cmd)
	return outputs(outputDocument, takesRecordID(cmd))
}
