package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// listJSON is the one shape of every list the CLI prints with -o json
// (docs/cli-json.md; annotated outputList, checked by
// TestEveryJSONListHasTheOneShape): "items", always an array; "next", the
// cursor of the following page, absent on the last; "more", true when the
// list was cut at --limit and has no cursor; "skipped", entries that could
// not be read; "invalid", stored values that do not validate.
type listJSON[T any] struct {
	Items   []T                 `json:"items"`
	Next    string              `json:"next,omitempty"`
	More    bool                `json:"more,omitempty"`
	Skipped int                 `json:"skipped,omitempty"`
	Invalid []api.InvalidRecord `json:"invalid,omitempty"`
}

// printList prints l in the one list shape, with [] for no items.
func printList[T any](w io.Writer, l listJSON[T]) error {
	if l.Items == nil {
		l.Items = []T{}
	}
	return printJSON(w, l)
}

// The kinds of -o json output a command has (annotationOutput): a list in
// the one shape (printList), or one document (the record, a result).
const (
	annotationOutput = "amends/output"
	outputList       = "list"
	outputDocument   = "document"
)

// outputs marks cmd's -o json output as kind (outputList or
// outputDocument); a test over the command tree checks that every command
// with --output says which, and that every list has the one shape.
func outputs(kind string, cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationOutput] = kind
	return cmd
}

// printMeasured prints what a bench measured, res, as JSON (output
// "json") or through table, even when the run failed part way: it returns
// runErr, the run's error, if there is one, else the printing's.
func printMeasured(w io.Writer, output string, res any, table func(io.Writer) error, runErr error) error {
	var err error
	if output == "json" {
		err = printJSON(w, res)
	} else {
		err = table(w)
	}
	if runErr != nil {
		return runErr
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// when shows an epoch-ms time relative to now and absolute, in UTC:
// "3m ago (2026-11-30 05:40:01Z)". Zero is "-".
func when(ms int64, now time.Time) string {
	if ms == 0 {
		return "-"
	}
	t := time.UnixMilli(ms)
	return relative(t, now) + " (" + t.UTC().Format("2006-01-02 15:04:05Z") + ")"
}

func relative(t, now time.Time) string {
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, ""
	}
	var s string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if suffix == "" {
		return "in " + s
	}
	return s + suffix
}

// nextRetry shows when the scheduler retries s next: "-" for a record it
// will not retry (succeeded, out of retries, or not auto-retried), with
// the aggregate's predicates.
func nextRetry(s *aggregate.State, now time.Time) string {
	if !s.Recoverable.AutoRetried() || !s.IsRetryable() {
		return "-"
	}
	return when(s.RetryState.NextRetryAt, now)
}

// itemState is the part of a record's state that a list item carries.
func itemState(it api.Item) *aggregate.State {
	return &aggregate.State{
		ID: it.ID, Status: it.Status, Recoverable: it.Recoverable, ExecuteAt: it.ExecuteAt,
		RetrySpec:  aggregate.RetrySpec{MaxRetries: it.MaxRetries},
		RetryState: aggregate.RetryState{Retries: it.Retries, TimeoutAt: it.TimeoutAt, NextRetryAt: it.NextRetryAt},
	}
}
