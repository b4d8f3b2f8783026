package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/processor"
)

const replayLong = `Replay gives committed events again to one function only, as its
service's processor reads them from the event store: the fix for a
projection that handled events wrongly, without rebuilding it.

Select one aggregate's versions:

  amends replay --context shop --aggregate order/o-1 --from 5 --to 9 --function Projector.onStep --reason "bug 123"

or a range of the context's stream sequences, narrowed by --type (aggregate
type), --event (event name, repeatable) and --since/--until (commit time):

  amends replay --context shop --from-seq 1000 --to-seq 5000 --event order_paid --function Projector.onStep --reason "..."

Like every bulk command it needs --dry-run, which lists what would be
replayed, or --yes. With --yes the replay is stored
under --request-id (new if not given) and run by the processor of the
function (a service running processor.WithRangeReplays), at most --rate
events per second; it keeps its progress, so it resumes after a restart.
Sending the same --request-id again does not replay twice: it shows the
stored replay and its progress. Every event that still fails becomes an
ordinary ExecutionFailed record. The command waits for the end with a
progress bar unless --no-wait.`

// parseReplayStart completes s from the flags --function, --aggregate,
// --since and --until (a new --request-id if none) and checks it as the
// processor will.
func parseReplayStart(s *api.ReplayStart, fn, aggregateArg, since, until string) error {
	p, n, ok := strings.Cut(fn, ".")
	if !ok || p == "" || n == "" {
		return usageErrorf("--function must be PROCESSOR.NAME, got %s", quoteShort(fn))
	}
	s.Processor, s.Function = p, n
	if aggregateArg != "" {
		t, id, ok := strings.Cut(aggregateArg, "/")
		if !ok || t == "" || id == "" {
			return usageErrorf("--aggregate must be TYPE/ID, got %s", quoteShort(aggregateArg))
		}
		if s.AggregateType != "" && s.AggregateType != t {
			return usageErrorf("--type %s and --aggregate %s name two aggregate types", s.AggregateType, aggregateArg)
		}
		s.AggregateType, s.AggregateID = t, id
	}
	for _, tf := range []struct {
		flag, v string
		to      *int64
	}{{"--since", since, &s.FromTime}, {"--until", until, &s.ToTime}} {
		if tf.v == "" {
			continue
		}
		t, err := parseTimeFlag(tf.v)
		if err != nil {
			return usageErrorf("%s %v", tf.flag, err)
		}
		*tf.to = t.UnixMilli()
	}
	if s.ID == "" {
		s.ID = uuid.NewString()
	}
	if strings.TrimSpace(s.Reason) == "" {
		return usageErrorf("replay needs --reason: a range replay is audited")
	}
	probe := s.Replay("cli", 1)
	if probe.Rate == 0 {
		probe.Rate = processor.DefaultReplayRate
	}
	if err := processor.ValidateReplay(&probe); err != nil {
		return usageErrorf("%s", strings.TrimSuffix(err.Error(), ": "+processor.ErrInvalidOption.Error()))
	}
	return nil
}

func newReplayCmd(a *app) *cobra.Command {
	var (
		cf               clientFlags
		s                api.ReplayStart
		aggregateArg, fn string
		since, until     string
		noWait           bool
		poll             time.Duration
		confirm          confirmFlags
	)
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay committed events to one function (dry run, rate limit, progress, resumable)",
		Long:  replayLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := parseReplayStart(&s, fn, aggregateArg, since, until); err != nil {
				return err
			}
			if poll <= 0 {
				return usageErrorf("--poll must be positive, got %s", poll)
			}
			if err := confirm.check("replay"); err != nil {
				return err
			}
			s.DryRun = confirm.dryRun
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			started, err := c.StartReplay(cmd.Context(), s)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if s.DryRun {
				if cf.output == "json" {
					// The API's shape: the plan under "plan" (docs/cli-json.md).
					return printJSON(a.stdout, started)
				}
				return printPlan(a, started.Plan)
			}
			r := *started.Replay
			if !started.Created {
				fmt.Fprintf(a.stderr, "replay %s was sent before: showing it (%s)\n", r.ID, r.Status)
			} else {
				fmt.Fprintf(a.stderr, "replay %s stored; watch it again with the same command and --request-id %s\n", r.ID, r.ID)
			}
			for !noWait && r.Status != api.ReplayDone {
				progressBar(a.stderr, r)
				select {
				case <-cmd.Context().Done():
					fmt.Fprintln(a.stderr)
					return cmd.Context().Err()
				case <-time.After(poll):
				}
				if r, err = c.Replay(cmd.Context(), r.ID); err != nil {
					return apiError(cmd, "", err)
				}
			}
			if !noWait {
				progressBar(a.stderr, r)
				fmt.Fprintln(a.stderr)
			}
			if cf.output == "json" {
				// The API's shape, as for a dry run: the replay, as last read,
				// under "replay" (docs/cli-json.md).
				return printJSON(a.stdout, api.ReplayStarted{Replay: &r, Created: started.Created})
			}
			fmt.Fprintf(a.stdout, "replay %s %s: %d events replayed, %d failed and recorded\n", r.ID, r.Status, r.Replayed, r.Failed)
			return nil
		},
	}
	cf.add(a, cmd)
	fs := cmd.Flags()
	fs.StringVar(&s.Context, "context", "", "the bounded context of the events (required)")
	fs.StringVar(&fn, "function", "", "the one function to replay to, PROCESSOR.NAME (required)")
	fs.StringVar(&aggregateArg, "aggregate", "", "one aggregate, TYPE/ID, with --from and --to versions")
	fs.Uint64Var(&s.FromVersion, "from", 0, "first version of --aggregate")
	fs.Uint64Var(&s.ToVersion, "to", 0, "last version of --aggregate")
	fs.Uint64Var(&s.FromSeq, "from-seq", 0, "first stream sequence (without --aggregate)")
	fs.Uint64Var(&s.ToSeq, "to-seq", 0, "last stream sequence (without --aggregate)")
	fs.StringVar(&s.AggregateType, "type", "", "only events of this aggregate type (sequence ranges)")
	fs.StringSliceVar(&s.EventNames, "event", nil, "only events of this name (repeatable)")
	fs.StringVar(&since, "since", "", "only events committed at or after (RFC 3339 or epoch ms)")
	fs.StringVar(&until, "until", "", "only events committed at or before (RFC 3339 or epoch ms)")
	fs.Float64Var(&s.Rate, "rate", processor.DefaultReplayRate, fmt.Sprintf("events per second at most, up to %d", processor.MaxReplayRate))
	fs.StringVar(&s.ID, "request-id", "", "the replay's id: the same id again shows it instead of replaying twice (default: a new one)")
	fs.StringVar(&s.Reason, "reason", "", "why (required, kept with the replay)")
	confirm.add(cmd, "", "which events")
	fs.BoolVar(&noWait, "no-wait", false, "return once the replay is stored")
	fs.DurationVar(&poll, "poll", 500*time.Millisecond, "how often the progress is read")
	return outputs(outputDocument, cmd)
}

func printPlan(a *app, plan *api.ReplayPlan) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "SEQ\tAGGREGATE\tVERSION\tEVENT\tNAME\tCOMMITTED")
	for _, e := range plan.Events {
		fmt.Fprintf(tw, "%d\t%s/%s\t%d\t%s\t%s\t%s\n", e.Seq, e.AggregateType, cell(e.AggregateID, 64), e.Version, e.EventID, e.Name, when(e.CreateTime, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	more := ""
	if plan.Count > len(plan.Events) {
		more = fmt.Sprintf(" (the first %d shown)", len(plan.Events))
	}
	if plan.Truncated {
		more += fmt.Sprintf("; only the first %d sequences were read, up to %d", processor.MaxPlanScan, plan.Scanned)
	}
	fmt.Fprintf(a.stdout, "dry run: %d events would be replayed%s; the function's own event filter applies when it runs\n", plan.Count, more)
	return nil
}

// progressBar draws r's progress over its range on one line.
func progressBar(w io.Writer, r api.Replay) {
	const width = 30
	first, last := r.First(), r.Last()
	done := min(r.Next, last+1) - min(first, r.Next)
	total := last - first + 1
	n := int(done * width / max(total, 1))
	fmt.Fprintf(w, "\r[%s%s] %3d%% %s replayed %d failed %d", strings.Repeat("=", n), strings.Repeat(" ", width-n), done*100/max(total, 1), r.Status, r.Replayed, r.Failed)
}
