package main

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

func newShowCmd(a *app) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one ExecutionFailed record",
		Long:  "Show prints a record: the failed event and function, the last error, the retry spec and state, and what may be done with it now.",
		Args:  exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := cf.record(cmd, args)
			if err != nil {
				return err
			}
			v, err := c.Get(cmd.Context(), id)
			if err != nil {
				return apiError(cmd, id, err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, v)
			}
			s, now := v.State, a.now()
			tw := newTable(a.stdout)
			rows := [][2]string{
				{"id", s.ID},
				{"status", string(s.Status)},
				{"recoverable", string(s.Recoverable)},
				{"version", fmt.Sprint(v.Version)},
				{"function", fmt.Sprintf("%s.%s@%s (%s)", s.Function.ProcessorName, s.Function.Name, s.Function.ContextName, s.Function.FunctionKind)},
				{"event", fmt.Sprintf("%s of %s.%s/%s version %d (sequence %d)", s.EventID.ID, s.EventID.AggregateID.ContextName,
					s.EventID.AggregateID.AggregateName, s.EventID.AggregateID.AggregateID, s.EventID.Version, s.EventID.Seq)},
				{"error", s.Error.ErrorCode + ": " + s.Error.ErrorMsg},
				{"last outcome", when(s.ExecuteAt, now)},
				{"retries", fmt.Sprintf("%d of %d (min backoff %ds, execution timeout %ds)", s.RetryState.Retries, s.RetrySpec.MaxRetries, s.RetrySpec.MinBackoff, s.RetrySpec.ExecutionTimeout)},
				{"retry at", when(s.RetryState.RetryAt, now)},
				{"timeout at", timeoutAt(&s, now)},
				{"next retry", nextRetry(&s, now)},
				{"can prepare", fmt.Sprint(s.CanRetry(now))},
				{"can force-prepare", fmt.Sprint(s.CanForceRetry(now))},
				{"scheduled", fmt.Sprint(s.Schedulable(now))},
			}
			rows = append(rows, intelRows(&s)...)
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			printSchedule(a, &s, now, remoteSchedule(cmd.Context(), c, s.ID))
			showHolds(cmd, a, c, &s)
			if s.Error.StackTrace != "" {
				fmt.Fprintf(a.stdout, "\nstack trace:\n%s\n", s.Error.StackTrace)
			}
			return nil
		},
	}
	cf.add(a, cmd)
	return outputs(outputDocument, takesRecordID(cmd))
}

// exactlyOneID accepts one record id.
func exactlyOneID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return usageErrorf("%s takes one record id; find ids with `amends list`", cmd.CommandPath())
	}
	return checkID(args[0])
}

// checkID checks a record id as the event store does: 1 to
// eventstore.MaxIDLength bytes of UTF-8 without control characters.
func checkID(id string) error {
	switch {
	case id == "":
		return usageErrorf("the record id is empty; find ids with `amends list`")
	case len(id) > eventstore.MaxIDLength:
		return usageErrorf("the record id %s is over the limit of %d bytes; find ids with `amends list`", quoteShort(id), eventstore.MaxIDLength)
	case !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl):
		return usageErrorf("the record id %s has a byte that is not text; find ids with `amends list`", quoteShort(id))
	}
	return nil
}

// timeoutAt is when the running attempt times out; only a PREPARED record
// has one running (a FAILED or SUCCEEDED record keeps the timeoutAt of an
// attempt long over, which reads as a deadline that passed).
func timeoutAt(s *aggregate.State, now time.Time) string {
	if s.Status != aggregate.StatusPrepared {
		return "- (no attempt running)"
	}
	return when(s.RetryState.TimeoutAt, now)
}
