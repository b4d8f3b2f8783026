package main

import (
	stdcontext "context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

const changeFunctionLong = `Change-function retargets a record at another function after the failed
one was renamed or moved (a confirmed processor migration): replays then go
to the new function. It is not a way to hand a failure to other logic.
All of --context, --processor, --name and --kind, and a --reason, are needed.`

func newChangeFunctionCmd(a *app) *cobra.Command {
	var (
		f                        commandFlags
		context, processor, name string
		kind                     string
	)
	cmd := &cobra.Command{
		Use:   "change-function ID --context C --processor P --name N --kind EVENT|STATE_EVENT --reason TEXT",
		Short: "Retarget a record at a renamed or moved function",
		Long:  changeFunctionLong,
		Args:  exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, fv := range [][2]string{{"context", context}, {"processor", processor}, {"name", name}, {"kind", kind}, {"reason", f.reason}} {
				if strings.TrimSpace(fv[1]) == "" {
					return usageErrorf("change-function needs --%s", fv[0])
				}
			}
			if err := checkEnum(kind, aggregate.FunctionKinds); err != nil {
				return usageErrorf("--kind %v", err)
			}
			k, _ := aggregate.ParseFunctionKind(kind)
			fn := aggregate.FunctionInfo{FunctionKind: k, ContextName: strings.TrimSpace(context), ProcessorName: strings.TrimSpace(processor), Name: strings.TrimSpace(name)}
			return f.run(cmd, a, args[0], one{name: api.CommandChangeFunction, dryRun: f.dryRun,
				decide: aggregate.ChangeFunction(fn),
				send: func(ctx stdcontext.Context, c *client.Client, id string, o client.CommandOptions) (api.CommandResponse, error) {
					return c.ChangeFunction(ctx, id, fn, o.Reason, o)
				}})
		},
	}
	f.add(a, cmd, true)
	f.addConfirm(cmd)
	fs := cmd.Flags()
	fs.StringVar(&context, "context", "", "bounded context of the new function")
	fs.StringVar(&processor, "processor", "", "processor of the new function")
	fs.StringVar(&name, "name", "", "name of the new function")
	fs.StringVar(&kind, "kind", "", "kind of the new function: EVENT or STATE_EVENT (or COMMAND, SOURCING, ERROR)")
	return outputs(outputDocument, takesRecordID(cmd))
}
