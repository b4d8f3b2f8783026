package main

import (
	"fmt"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// printFingerprints prints the summary's fingerprint groups: the
// fingerprint, its function and code, counts by status, the oldest and the
// latest last outcome of its records, and a sample message.
func printFingerprints(a *app, s api.Summary) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "FINGERPRINT\tFUNCTION\tERROR\tTOTAL\tFAILED\tPREPARED\tSUCCEEDED\tREMOVED\tOLDEST OUTCOME\tLATEST OUTCOME\tSAMPLE")
	for _, g := range s.Fingerprints {
		fmt.Fprintf(tw, "%s\t%s.%s@%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", g.Fingerprint, g.Processor, g.Function, g.FunctionContext, g.ErrorCode,
			g.Total, g.ByStatus[aggregate.StatusFailed], g.ByStatus[aggregate.StatusPrepared], g.ByStatus[aggregate.StatusSucceeded], g.Removed,
			when(g.FirstSeen, now), when(g.LastSeen, now), oneLine(g.SampleMessage, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n%d records in %d fingerprints; act on one with `amends rules add --fingerprint FP`\n", s.Total, len(s.Fingerprints))
	printRemoved(a, s.Removed)
	if len(s.Fingerprints) > 0 {
		fmt.Fprintln(a.stdout, "OLDEST and LATEST OUTCOME are the earliest and latest last outcome (latest failure, or success) of the group's records, not when the problem first appeared.")
	}
	return nil
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	out := make([]rune, 0, n)
	for _, r := range s {
		if len(out) == n {
			return string(out) + "…"
		}
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

// printRemoved says how many records retention removed (counted in no
// other column but REMOVED).
func printRemoved(a *app, n int64) {
	if n > 0 {
		fmt.Fprintf(a.stdout, "%d more finished records were removed by retention (REMOVED; counted in no other column)\n", n)
	}
}
