package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

const retrySpecLong = `Retry-spec replaces a record's retry policy: how many scheduled retries it
gets, the first backoff (doubling with each retry) and how long a replay may
run. It applies from the next prepare; the current retry state is kept.
All three values are required, in seconds where they are times.`

func newRetrySpecCmd(a *app) *cobra.Command {
	var (
		f                                   commandFlags
		maxRetries, minBackoff, execTimeout int32
		maxBackoff                          int32
		jitter                              float64
	)
	cmd := &cobra.Command{
		Use:   "retry-spec ID --max-retries N --min-backoff SECONDS --execution-timeout SECONDS",
		Short: "Change a record's retry spec",
		Long:  retrySpecLong,
		Args:  exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range []string{"max-retries", "min-backoff", "execution-timeout"} {
				if !cmd.Flags().Changed(name) {
					return usageErrorf("retry-spec needs --%s (all three of --max-retries, --min-backoff and --execution-timeout)", name)
				}
			}
			for _, fv := range []struct {
				name string
				v    int32
			}{{"max-retries", maxRetries}, {"min-backoff", minBackoff}, {"execution-timeout", execTimeout}} {
				if fv.v < 0 {
					return usageErrorf("--%s must be 0 or more, got %d", fv.name, fv.v)
				}
			}
			if maxBackoff < 0 || !(jitter >= 0 && jitter <= 1) {
				return usageErrorf("--max-backoff must be 0 or more and --jitter from 0 to 1, got %d and %g", maxBackoff, jitter)
			}
			spec := aggregate.RetrySpec{MaxRetries: maxRetries, MinBackoff: minBackoff, ExecutionTimeout: execTimeout, MaxBackoff: maxBackoff, Jitter: jitter}
			if err := aggregate.ValidateRetrySpec(spec); err != nil {
				return usageErrorf("--max-retries %d with --min-backoff %d: the last backoff is too long to compute (%v); lower one of them", maxRetries, minBackoff, err)
			}
			return f.run(cmd, a, args[0], one{name: api.CommandApplyRetrySpec, dryRun: f.dryRun,
				decide: aggregate.ApplyRetrySpec(spec),
				send: func(ctx context.Context, c *client.Client, id string, o client.CommandOptions) (api.CommandResponse, error) {
					return c.ChangeRetrySpec(ctx, id, spec, o)
				}})
		},
	}
	f.add(a, cmd, false)
	f.addConfirm(cmd)
	fs := cmd.Flags()
	fs.Int32Var(&maxRetries, "max-retries", 0, "scheduled retries the record gets")
	fs.Int32Var(&minBackoff, "min-backoff", 0, "first backoff in seconds; it doubles with each retry")
	fs.Int32Var(&execTimeout, "execution-timeout", 0, "seconds a prepared replay may run before it may be prepared again")
	fs.Int32Var(&maxBackoff, "max-backoff", 0, "cap of one backoff interval in seconds (0: none, Wow's doubling)")
	fs.Float64Var(&jitter, "jitter", 0, "largest fraction, 0 to 1, taken off an interval, drawn from the record id and attempt")
	return outputs(outputDocument, takesRecordID(cmd))
}
