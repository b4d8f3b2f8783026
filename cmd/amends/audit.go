package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/server"
)

const auditLong = `Audit shows the audit log of the API and dashboard, oldest first, one page
at a time: refused credentials (auth_failure, with the reason), clients
that spent their budget of failed authentications (rate_limited), sign-ins
and sign-outs of the dashboard, and every read of a record's original event
(event_read: who read which payload, from which address). It needs an
operator token.

--kind, --actor and --record select; --since and --until bound the time
(RFC 3339 or epoch ms). --all follows the pages to the end; otherwise the
last line gives the --cursor of the next page.`

func newAuditCmd(a *app) *cobra.Command {
	var (
		cf  clientFlags
		af  auditFlags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: failed authentications, sign-ins, reads of original events",
		Long:  auditLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := af.query()
			if err != nil {
				return err
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			if err := resolveRecord(cmd, c, &q.Record); err != nil {
				return err
			}
			entries := []api.AuditEntry{}
			next, skipped := "", 0
			for {
				page, err := c.Audit(cmd.Context(), q)
				if err != nil {
					return apiError(cmd, "", err)
				}
				entries = append(entries, page.Entries...)
				next, skipped = page.Next, skipped+page.Skipped
				if !all || next == "" {
					break
				}
				q.Cursor = next
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.AuditEntry]{Items: entries, Next: next, Skipped: skipped})
			}
			return printAudit(a, entries, next, skipped)
		},
	}
	cf.add(a, cmd)
	fs := cmd.Flags()
	kinds := make([]string, len(audit.Kinds))
	for i, k := range audit.Kinds {
		kinds[i] = string(k)
	}
	fs.StringVar(&af.kind, "kind", "", "only entries of this kind: "+strings.Join(kinds, ", "))
	fs.StringVar(&af.actor, "actor", "", "only this principal's entries")
	fs.StringVar(&af.record, "record", "", "only the entries about this record (its id, or a unique prefix of a live record's)")
	fs.StringVar(&af.since, "since", "", "only entries at or after this time (RFC 3339 or epoch ms)")
	fs.StringVar(&af.until, "until", "", "only entries at or before this time (RFC 3339 or epoch ms)")
	fs.IntVar(&af.limit, "limit", audit.DefaultLimit, fmt.Sprintf("entries per page, 1 to %d", audit.MaxLimit))
	fs.StringVar(&af.cursor, "cursor", "", "continue after the page that printed it")
	fs.BoolVar(&all, "all", false, "print every page")
	return takesRecordID(outputs(outputList, cmd))
}

func parseAuditTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	return t.UnixMilli(), err
}

func printAudit(a *app, entries []api.AuditEntry, next string, skipped int) error {
	now := a.now()
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "WHEN\tKIND\tACTOR\tCREDENTIAL\tCLIENT\tROUTE\tRECORD\tREASON")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", when(e.Time, now), e.Kind, orDash(cell(e.Actor, 64)), orDash(string(e.Credential)), orDash(e.Client),
			orDash(cell(e.Route, 64)), orDash(cell(e.Record, 64)), orDash(cell(e.Reason, maxShownError)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintln(a.stdout, "no audit entries")
	}
	if skipped > 0 {
		fmt.Fprintf(a.stdout, "skipped %d stored messages that do not decode (written past amends)\n", skipped)
	}
	if next != "" {
		fmt.Fprintf(a.stdout, "more: --cursor %s (or --all)\n", next)
	}
	return nil
}

// auditFlags are the flags of amends audit that select entries.
type auditFlags struct {
	kind, actor, record string
	since, until        string
	limit               int
	cursor              string
}

// query is the audit query the flags ask for; a flag out of bounds is a
// usage error that names it.
func (af *auditFlags) query() (api.AuditQuery, error) {
	q := api.AuditQuery{Actor: af.actor, Record: af.record, Limit: af.limit, Cursor: af.cursor}
	if af.kind != "" {
		k, err := audit.ParseKind(af.kind)
		if err != nil {
			return q, usageErrorf("--kind: %v", err)
		}
		q.Kind = k
	}
	if !bounds.Within(af.limit, 1, audit.MaxLimit) {
		return q, usageErrorf("--limit must be from 1 to %d, got %d", audit.MaxLimit, af.limit)
	}
	if af.cursor != "" {
		if _, err := strconv.ParseUint(af.cursor, 10, 64); err != nil {
			return q, usageErrorf("--cursor must be the number a previous audit printed, got %s", quoteShort(af.cursor))
		}
	}
	for _, f := range []struct {
		name, v string
	}{{"actor", af.actor}, {"record", af.record}} {
		if len(f.v) > server.MaxParamBytes {
			return q, usageErrorf("--%s is %d bytes, over the limit of %d", f.name, len(f.v), server.MaxParamBytes)
		}
	}
	for _, t := range []struct {
		name, v string
		to      *int64
	}{{"since", af.since, &q.From}, {"until", af.until, &q.To}} {
		if t.v == "" {
			continue
		}
		ms, err := parseAuditTime(t.v)
		if err != nil {
			return q, usageErrorf("--%s %s: want RFC 3339 (2026-11-30T08:00:00Z) or epoch milliseconds", t.name, quoteShort(t.v))
		}
		*t.to = ms
	}
	return q, nil
}
