package main

import (
	"context"
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// showScheduleLines bounds the retries show prints.
const showScheduleLines = 10

// intelRows are show's rows beyond Wow's: the fingerprint and the backoff's
// cap and jitter, where the record has them.
func intelRows(s *aggregate.State) [][2]string {
	var rows [][2]string
	if s.Error.Fingerprint != "" {
		rows = append(rows, [2]string{"fingerprint", s.Error.Fingerprint})
	}
	if s.RetrySpec.MaxBackoff != 0 || s.RetrySpec.Jitter != 0 {
		rows = append(rows, [2]string{"backoff", fmt.Sprintf("at most %ds per interval, jitter %g", s.RetrySpec.MaxBackoff, s.RetrySpec.Jitter)})
	}
	return rows
}

// remoteSchedule asks the server for the record's schedule, which knows
// the park-until-deploy rules; nil if the server cannot say (an older one, or an error: show
// then computes the schedule itself).
func remoteSchedule(ctx context.Context, c *client.Client, id string) *api.RecordSchedule {
	s, err := c.Schedule(ctx, id)
	if err != nil {
		return nil
	}
	return &s
}

// printSchedule prints the automatic retries s has left, at most
// showScheduleLines of them: the server's (remote, which says whether a
// rule parks the record until a deploy) or else
// aggregate.RemainingSchedule's.
func printSchedule(a *app, s *aggregate.State, now time.Time, remote *api.RecordSchedule) {
	sched := aggregate.RemainingSchedule(*s, 0)
	if remote != nil {
		if remote.ParkedBy != "" {
			fmt.Fprintf(a.stdout, "\nparked until a new build of %s registers, by rule %s (amends rules list)\n", s.Function.ProcessorName, remote.ParkedBy)
			return
		}
		sched = remote.Retries
	}
	if len(sched) == 0 {
		return
	}
	left := s.RetrySpec.MaxRetries - s.RetryState.Retries
	fmt.Fprintf(a.stdout, "\nremaining retries (%d, each at the earliest, if every replay fails at once):\n", left)
	tw := newTable(a.stdout)
	for i, r := range sched {
		if i == showScheduleLines {
			fmt.Fprintf(tw, "…\t%d more\n", int(left)-i)
			break
		}
		fmt.Fprintf(tw, "  retry %d\t%s\n", r.Attempt, when(r.At, now))
	}
	_ = tw.Flush()
}
