package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/text"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/server"
)

const quarantineLong = `Quarantine shows the messages that a consumer could never handle and so
terminated, instead of retrying them forever behind the good ones: a
message that does not decode (undecodable), whose record history is
corrupt (corrupt), whose view would not read back (invalid_view), or that
kept failing through its bounded retries (retries_exhausted).

Each entry names the consumer (the projector, amends-views, or a
service's replay consumer, amends_replay_<context>), the stream and
sequence of the message, its subject and what went wrong. Read the
message itself with: nats stream get <stream> <sequence>.

It also shows the entries of KV buckets that amends skipped because they
do not validate (reason invalid_entry): a rule, release, hold, progress,
view, dedup claim and so on written by something else. Their consumer is
the bucket (amends_rules, ...), their stream the bucket's stream
(KV_<bucket>), their sequence the entry's revision and their subject
$KV.<bucket>.<key>; the error names the field and the rule it breaks.
What the entry guarded fails safe meanwhile (a bad rule matches nothing, a
bad progress holds its events, a bad release is halted, a bad view is
projected again). Write a valid value, or remove the entry with
amends repair purge-entry.`

const quarantineListLong = `List shows the quarantined messages, oldest first, one page at a time.

--consumer keeps one consumer's. --all follows the pages to the end;
otherwise the last line gives the --cursor of the next page.`

func newQuarantineCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "Show the messages consumers quarantined",
		Long:  quarantineLong,
		Args:  noArgs,
	}
	cmd.AddCommand(newQuarantineListCmd(a))
	return cmd
}

func newQuarantineListCmd(a *app) *cobra.Command {
	var (
		cf       clientFlags
		consumer string
		limit    int
		cursor   string
		all      bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the quarantined messages",
		Long:  quarantineListLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !bounds.Within(limit, 1, quarantine.MaxLimit) {
				return usageErrorf("--limit must be from 1 to %d, got %d", quarantine.MaxLimit, limit)
			}
			if cursor != "" {
				if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
					return usageErrorf("--cursor must be the number a previous list printed, got %s", quoteShort(cursor))
				}
			}
			if len(consumer) > server.MaxParamBytes {
				return usageErrorf("--consumer is %d bytes, over the limit of %d", len(consumer), server.MaxParamBytes)
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			q := api.QuarantineQuery{Limit: limit, Consumer: consumer, Cursor: cursor}
			entries := []api.QuarantineEntry{}
			next := ""
			for {
				page, err := c.Quarantine(cmd.Context(), q)
				if err != nil {
					return apiError(cmd, "", err)
				}
				entries = append(entries, page.Entries...)
				next = page.Next
				if !all || next == "" {
					break
				}
				q.Cursor = next
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.QuarantineEntry]{Items: entries, Next: next})
			}
			return printQuarantine(a, entries, next, consumer)
		},
	}
	cf.add(a, cmd)
	fs := cmd.Flags()
	fs.StringVar(&consumer, "consumer", "", "only this consumer's entries, e.g. amends-views or amends_replay_orders")
	fs.IntVar(&limit, "limit", 100, fmt.Sprintf("entries per page, 1 to %d", quarantine.MaxLimit))
	fs.StringVar(&cursor, "cursor", "", "continue after the page that printed it")
	fs.BoolVar(&all, "all", false, "print every page")
	return outputs(outputList, cmd)
}

// maxShownError is how much of an entry's error the table shows.
const maxShownError = 160

func printQuarantine(a *app, entries []api.QuarantineEntry, next, consumer string) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "QUARANTINED\tCONSUMER\tREASON\tSTREAM\tSEQ\tSUBJECT\tDELIVERIES\tERROR")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", when(e.At, now), cell(e.Consumer, 64), e.Reason, cell(e.Stream, 64), e.Seq,
			cell(e.Subject, 128), e.Deliveries, cell(e.Error, maxShownError))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case len(entries) == 0 && consumer != "":
		fmt.Fprintf(a.stdout, "nothing quarantined by %s\n", consumer)
	case len(entries) == 0:
		fmt.Fprintln(a.stdout, "nothing quarantined")
	}
	if next != "" {
		fmt.Fprintf(a.stdout, "more: --cursor %s (or --all)\n", next)
	}
	return nil
}

// cell makes s one table cell: control characters (tabs, newlines, which
// a forged entry may hold) become spaces, and it is cut to n bytes.
func cell(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	return text.Cut(s, n) + "…"
}
